import { type ContentTrustLevel, defineContract, type RiskLevel } from '@toolfence/tool-contract';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../registry/configuration-error.js';
import { type ToolSpec, textResult } from '../registry/tool.js';
import { DEFAULT_FLOW_GUARD_LIMITS, FlowGuard } from './flow-guard.js';

function spec(name: string, risk: RiskLevel, contentTrust: ContentTrustLevel): ToolSpec {
  return {
    name,
    description: name,
    inputSchema: { type: 'object' },
    contract: defineContract({ risk, contentTrust, idempotent: false, version: '1.0.0' }),
  };
}

const issue = spec('get_issue', 'read-only', 'prompt-injection-prone');
const inbox = spec('read_inbox', 'read-only', 'untrusted');
const repo = spec('get_file_contents', 'read-only', 'sensitive');
const docs = spec('list_docs', 'read-only', 'trusted');
const publish = spec('create_pull_request', 'external-publication', 'trusted');
const ok = textResult('ok');

describe('FlowGuard rules', () => {
  it('asks for a sink in an exposed session and denies once it also holds private data', () => {
    const guard = new FlowGuard();
    expect(guard.check('s', publish, 'allow')).toBeUndefined();
    guard.record('s', issue, ok);
    const ask = guard.check('s', publish, 'allow');
    expect(ask).toMatchObject({
      verdict: 'ask',
      enforced: true,
      sink: { tool: 'create_pull_request', risk: 'external-publication', basis: 'declared' },
    });
    guard.record('s', repo, ok);
    const deny = guard.check('s', publish, 'allow');
    expect(deny?.verdict).toBe('deny');
    expect(deny?.reason).toBe(
      'This session read untrusted content from "get_issue" and holds private data from "get_file_contents"; "create_pull_request" can publish or send data outside and could leak it, so the call is denied. Continue without it or ask the user to permit the flow from "get_file_contents" to "create_pull_request".',
    );
    expect(deny?.labels).toEqual({
      exposedBy: [{ tool: 'get_issue', trust: 'prompt-injection-prone', basis: 'declared' }],
      privateFrom: [{ tool: 'get_file_contents', trust: 'sensitive', basis: 'declared' }],
    });
    expect(Object.isFrozen(deny)).toBe(true);
  });

  it.each([
    ['allow', 'ask'],
    ['ask', 'ask'],
  ] as const)(
    'never lowers the verdict: policy %s in an exposed session gives %s',
    (verdict, raised) => {
      const guard = new FlowGuard();
      guard.record('s', issue, ok);
      expect(guard.check('s', publish, verdict)?.verdict).toBe(raised);
    },
  );

  it('leaves a policy deny alone (nothing to raise)', () => {
    const guard = new FlowGuard();
    guard.record('s', issue, ok);
    guard.record('s', repo, ok);
    expect(guard.check('s', publish, 'deny')).toBeUndefined();
  });

  it('does not raise a call that is not a sink, however labelled the session', () => {
    const guard = new FlowGuard();
    guard.record('s', issue, ok);
    guard.record('s', repo, ok);
    expect(guard.check('s', docs, 'allow')).toBeUndefined();
  });

  it('labels only rise: trusted results after exposure change nothing', () => {
    const guard = new FlowGuard();
    guard.record('s', issue, ok);
    const before = guard.labels('s');
    for (let index = 0; index < 20; index += 1) guard.record('s', docs, ok);
    expect(guard.labels('s')).toEqual(before);
    guard.record('s', inbox, ok);
    expect(guard.labels('s').exposedBy.map((source) => source.tool)).toEqual([
      'get_issue',
      'read_inbox',
    ]);
    expect(guard.check('s', publish, 'allow')?.verdict).toBe('ask');
  });

  it('records an error result too: the tool still returned content', () => {
    const guard = new FlowGuard();
    guard.record('s', issue, textResult('failed', { isError: true }));
    expect(guard.check('s', publish, 'allow')?.verdict).toBe('ask');
  });

  it('keeps sessions apart', () => {
    const guard = new FlowGuard();
    guard.record('a', issue, ok);
    guard.record('a', repo, ok);
    expect(guard.check('b', publish, 'allow')).toBeUndefined();
    expect(guard.labels('b')).toEqual({ exposedBy: [], privateFrom: [] });
    expect(guard.check('a', publish, 'allow')?.verdict).toBe('deny');
    guard.endSession('a');
    expect(guard.check('a', publish, 'allow')).toBeUndefined();
  });

  it('judges each call by its own spec, contract and session when they alternate', () => {
    const guard = new FlowGuard();
    const readOnly = defineContract({
      risk: 'read-only',
      contentTrust: 'trusted',
      idempotent: true,
      version: '1.0.0',
    });
    guard.record('a', issue, ok);
    for (let turn = 0; turn < 3; turn++) {
      expect(guard.check('a', publish, 'allow')?.verdict).toBe('ask');
      expect(guard.check('a', publish, 'allow', readOnly)).toBeUndefined();
      expect(guard.check('a', docs, 'allow')).toBeUndefined();
      expect(guard.check('b', publish, 'allow')).toBeUndefined();
    }
    // A result judged by a trusted contract labels nothing; by the spec's own, it exposes.
    guard.record('c', issue, ok, readOnly);
    expect(guard.labels('c')).toEqual({ exposedBy: [], privateFrom: [] });
    guard.record('c', issue, ok);
    expect(guard.labels('c').exposedBy).toMatchObject([{ tool: 'get_issue' }]);
  });

  it('reads content trust from the call contract it is given (per-operation contracts)', () => {
    const guard = new FlowGuard();
    const tool = spec('mail', 'external-publication', 'prompt-injection-prone');
    const send = defineContract({
      risk: 'external-publication',
      contentTrust: 'trusted',
      idempotent: false,
      version: '1.0.0',
    });
    guard.record('s', tool, ok, send);
    expect(guard.labels('s').exposedBy).toEqual([]);
    guard.record('s', tool, ok);
    expect(guard.check('s', tool, 'allow', send)?.verdict).toBe('ask');
  });
});

describe('FlowGuard undeclared tools', () => {
  const undeclared = (name: string, description: string, annotations?: object): ToolSpec => ({
    name,
    description,
    inputSchema: { type: 'object' },
    ...(annotations === undefined ? {} : { annotations: annotations as never }),
  });

  it.each([
    ['the heuristic (a page reader)', undeclared('browse_page', 'Opens a page.'), 'heuristic'],
    [
      'openWorldHint',
      undeclared('lookup_record', 'Looks a record up.', { openWorldHint: true }),
      'hint',
    ],
  ] as const)('exposes the session by %s', (_label, tool, basis) => {
    const guard = new FlowGuard();
    guard.record('s', tool, ok);
    expect(guard.labels('s').exposedBy[0]?.basis).toBe(basis);
  });

  it('reads openWorldHint on a sensitive-sounding tool as exposure besides the private data', () => {
    const guard = new FlowGuard();
    guard.record(
      's',
      undeclared('read_vault_secret', 'Reads a secret.', { openWorldHint: true }),
      ok,
    );
    expect(guard.labels('s')).toEqual({
      exposedBy: [{ tool: 'read_vault_secret', trust: 'untrusted', basis: 'hint' }],
      privateFrom: [{ tool: 'read_vault_secret', trust: 'sensitive', basis: 'heuristic' }],
    });
  });

  it.each([
    ['the heuristic (post)', undeclared('post_message', 'Posts.'), 'heuristic'],
    ['destructiveHint', undeclared('sync_records', 'Syncs.', { destructiveHint: true }), 'hint'],
  ] as const)('finds a sink by %s', (_label, tool, basis) => {
    const guard = new FlowGuard();
    guard.record('s', issue, ok);
    expect(guard.check('s', tool, 'allow')?.sink.basis).toBe(basis);
  });
});

describe('FlowGuard options', () => {
  it('refuses unknown option keys, in the options, a selector and a permit', () => {
    expect(() => new FlowGuard({ maxSession: 3 } as never)).toThrow(/did you mean "maxSessions"/);
    expect(() => new FlowGuard({ sinks: [{ tol: 'x' } as never] })).toThrow(ConfigurationError);
    expect(() => new FlowGuard({ permit: [{ from: 'a', to: 'b', via: 'c' } as never] })).toThrow(
      ConfigurationError,
    );
  });

  it.each([
    ['mode', { mode: 'audit' }],
    ['maxSessions zero', { maxSessions: 0 }],
    ['maxSessions fractional', { maxSessions: 1.5 }],
    ['maxSourcesPerSession negative', { maxSourcesPerSession: -1 }],
    ['sinks not an array', { sinks: 'send_email' }],
    ['an empty selector', { untrusted: [''] }],
    ['a selector naming nothing', { sensitive: [{}] }],
    ['permit not an array', { permit: { from: 'a', to: 'b' } }],
    ['a permit without to', { permit: [{ from: 'a' }] }],
  ])('refuses a bad value: %s', (_label, options) => {
    expect(() => new FlowGuard(options as never)).toThrow(ConfigurationError);
  });

  it('states its default limits', () => {
    expect(DEFAULT_FLOW_GUARD_LIMITS).toEqual({ maxSessions: 10_000, maxSourcesPerSession: 16 });
    expect(new FlowGuard().mode).toBe('enforce');
  });

  it('observe mode reports the raise without enforcing it', () => {
    const guard = new FlowGuard({ mode: 'observe' });
    guard.record('s', issue, ok);
    guard.record('s', repo, ok);
    expect(guard.mode).toBe('observe');
    expect(guard.check('s', publish, 'allow')).toMatchObject({ verdict: 'deny', enforced: false });
  });

  it('enforces maxSourcesPerSession: the label stays set, further sources are not named', () => {
    const guard = new FlowGuard({ maxSourcesPerSession: 2 });
    for (let index = 0; index < 5; index += 1) {
      guard.record('s', spec(`page_${index}`, 'read-only', 'untrusted'), ok);
    }
    expect(guard.labels('s').exposedBy).toEqual([
      { tool: 'page_0', trust: 'untrusted', basis: 'declared' },
      { tool: 'page_1', trust: 'untrusted', basis: 'declared' },
      { tool: '*', trust: 'prompt-injection-prone', basis: 'unnamed' },
    ]);
    expect(guard.check('s', publish, 'allow')?.verdict).toBe('ask');
  });

  // Sources beyond maxSourcesPerSession still count: one unnamed entry per label that no permit
  // covers, so permitted sources read first cannot hide an unpermitted one read after them.
  const page = (index: number) => spec(`page_${index}`, 'read-only', 'untrusted');
  const memory = (index: number) => spec(`memory_${index}`, 'read-only', 'sensitive');
  const vault = spec('vault_secret', 'read-only', 'sensitive');
  const pages = [page(0), page(1)];
  const memories = [memory(0), memory(1)];
  it.each([
    [
      'private overflow: an unpermitted private source after 2 permitted ones',
      [page(0), ...memories, vault],
      'deny',
      'privateFrom',
    ],
    [
      'untrusted overflow: an unpermitted exposing source after 2 permitted ones',
      [...pages, issue],
      'ask',
      'exposedBy',
    ],
    ['both overflow', [...memories, ...pages, issue, vault], 'deny', 'privateFrom'],
    [
      'a permitted source beyond the limit still counts, unnamed (fail closed)',
      [...pages, page(2)],
      'ask',
      'exposedBy',
    ],
    [
      'a permitted private source beyond the limit still counts, unnamed',
      [page(0), ...memories, memory(2)],
      'deny',
      'privateFrom',
    ],
    [
      'permits cover every named source and nothing overflows: no raise',
      [...pages, ...memories],
      undefined,
      undefined,
    ],
    [
      'a named source read again adds nothing: no raise',
      [...pages, ...memories, page(0), memory(1)],
      undefined,
      undefined,
    ],
  ] as const)('maxSourcesPerSession overflow: %s', (_label, reads, verdict, label) => {
    const guard = new FlowGuard({
      maxSourcesPerSession: 2,
      permit: [
        { from: 'page_*', to: 'create_pull_request' },
        { from: 'memory_*', to: 'create_pull_request' },
      ],
    });
    for (const read of reads) guard.record('s', read, ok);
    const raise = guard.check('s', publish, 'allow');
    expect(raise?.verdict).toBe(verdict);
    const labels = guard.labels('s');
    if (label === undefined) {
      expect(
        [...labels.exposedBy, ...labels.privateFrom].map((source) => source.basis),
      ).not.toContain('unnamed');
      return;
    }
    expect(labels[label]).toHaveLength(3);
    expect(labels[label][2]).toMatchObject({ tool: '*', basis: 'unnamed' });
    expect(raise?.labels).toEqual(labels);
    expect(raise?.reason).toContain(
      'further sources not named (beyond maxSourcesPerSession; no permit covers them)',
    );
    if (verdict === 'deny') {
      expect(raise?.reason).toContain('Continue without it or end the session to start clean');
    }
  });

  it('an unnamed source is covered by no permit, not even from "*"', () => {
    const guard = new FlowGuard({
      maxSourcesPerSession: 1,
      permit: [{ from: '*', to: 'create_pull_request' }],
    });
    guard.record('s', page(0), ok);
    expect(guard.check('s', publish, 'allow')).toBeUndefined();
    guard.record('s', page(1), ok);
    expect(guard.check('s', publish, 'allow')?.verdict).toBe('ask');
  });

  it('enforces maxSessions: the least recently used session is dropped and then judged exposed and private', () => {
    const guard = new FlowGuard({ maxSessions: 2 });
    guard.record('a', issue, ok);
    guard.record('b', issue, ok);
    guard.check('a', publish, 'allow'); // a is now the most recently used
    guard.record('c', docs, ok); // a clean result takes no room
    guard.record('c', issue, ok); // drops b
    expect(guard.labels('a').exposedBy[0]?.tool).toBe('get_issue');
    expect(guard.labels('b')).toEqual({
      exposedBy: [{ tool: '*', trust: 'prompt-injection-prone', basis: 'dropped' }],
      privateFrom: [{ tool: '*', trust: 'sensitive', basis: 'dropped' }],
    });
    const raise = guard.check('b', publish, 'allow');
    expect(raise?.verdict).toBe('deny');
    expect(raise?.reason).toContain('its labels were dropped at the session limit');
    guard.endSession('b');
    expect(guard.check('b', publish, 'allow')).toBeUndefined();
  });

  it('dropSession judges a session as dropped until endSession, labelled or not, within maxSessions ids', () => {
    const guard = new FlowGuard({ maxSessions: 1 });
    guard.dropSession('resumed');
    expect(guard.labels('resumed').privateFrom[0]?.basis).toBe('dropped');
    expect(guard.check('resumed', publish, 'allow')?.verdict).toBe('deny');
    // A labelled session keeps its labels and gets the dropped entries beside them.
    guard.record('held', issue, ok);
    guard.dropSession('held');
    expect(guard.labels('held').exposedBy.map((source) => source.basis)).toEqual([
      'declared',
      'dropped',
    ]);
    expect(guard.check('held', publish, 'allow')?.verdict).toBe('deny');
    guard.endSession('held');
    expect(guard.check('held', publish, 'allow')).toBeUndefined();
    // Dropped ids are remembered within maxSessions of them: 'resumed' is forgotten.
    guard.dropSession('other');
    expect(guard.check('resumed', publish, 'allow')).toBeUndefined();
  });

  it('forgets dropped sessions beyond maxSessions of them', () => {
    const guard = new FlowGuard({ maxSessions: 1 });
    guard.record('a', issue, ok);
    guard.record('b', issue, ok); // drops a
    guard.record('c', issue, ok); // drops b; a is forgotten
    expect(guard.labels('a')).toEqual({ exposedBy: [], privateFrom: [] });
    expect(guard.labels('b').exposedBy[0]?.basis).toBe('dropped');
  });

  it('configured sources and sinks: untrusted and sensitive win over trusted, sinks over notSinks', () => {
    const guard = new FlowGuard({
      untrusted: ['list_docs'],
      trusted: ['list_docs', 'get_issue'],
      sensitive: [{ server: 'vault' }],
      sinks: ['list_docs'],
      notSinks: ['list_docs', 'create_pull_request'],
    });
    guard.record('s', issue, ok);
    expect(guard.labels('s').exposedBy).toEqual([]);
    guard.record('s', docs, ok);
    guard.record(
      's',
      { ...docs, name: 'vault__get', origin: { server: 'vault', tool: 'get' } },
      ok,
    );
    expect(guard.labels('s')).toEqual({
      exposedBy: [{ tool: 'list_docs', trust: 'untrusted', basis: 'configured' }],
      privateFrom: [
        { tool: 'vault__get', server: 'vault', trust: 'sensitive', basis: 'configured' },
      ],
    });
    expect(guard.check('s', publish, 'allow')).toBeUndefined();
    expect(guard.check('s', docs, 'allow')?.sink).toEqual({
      tool: 'list_docs',
      risk: 'read-only',
      basis: 'configured',
    });
  });

  it('a string selector never names a server: notSinks "gh" leaves the gh server\'s sinks', () => {
    const guard = new FlowGuard({ notSinks: ['gh'] });
    const pr = { ...publish, name: 'gh__open_pr', origin: { server: 'gh', tool: 'open_pr' } };
    guard.record('s', issue, ok);
    expect(guard.check('s', pr, 'allow')?.verdict).toBe('ask');
  });

  it('names at most three sources in a reason', () => {
    const guard = new FlowGuard();
    for (let index = 0; index < 5; index += 1) {
      guard.record('s', spec(`page_${index}`, 'read-only', 'untrusted'), ok);
    }
    expect(guard.check('s', publish, 'allow')?.reason).toContain(
      '"page_0", "page_1", "page_2" and 2 more',
    );
  });
});
