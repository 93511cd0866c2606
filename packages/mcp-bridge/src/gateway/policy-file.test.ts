import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToolContext, type JsonObject, type ToolSpec } from '@toolfence/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  defaultInspectPolicy,
  loadInspectPolicy,
  parseInspectPolicy,
  refuseIssuerlessPrincipalRules,
  warnUnmatchedRules,
} from './policy-file.js';
import { PolicyFileError } from './policy-file-error.js';

const context = createToolContext({ runId: 'test' });

function verdictFor(
  policy: ReturnType<typeof parseInspectPolicy>,
  name: string,
  contract?: ToolSpec['contract'],
): unknown {
  const spec: ToolSpec = {
    name,
    description: `MCP tool ${name}`,
    inputSchema: { type: 'object' },
    ...(contract === undefined ? {} : { contract }),
  };
  const decision = policy.authorizer.authorize({
    toolName: name,
    args: {} as JsonObject,
    context,
    spec,
    contract,
    effect: contract === undefined ? 'unknown' : contract.risk === 'read-only' ? 'read' : 'write',
  });
  return (decision as { verdict: string }).verdict;
}

const destructive = {
  risk: 'destructive',
  contentTrust: 'trusted',
  idempotent: true,
  version: '1.0.0',
} as const;

describe('inspect policy files', () => {
  it('defaults to RiskPolicy defaults', () => {
    const policy = defaultInspectPolicy();
    expect(policy.summary).toEqual({
      kind: 'risk',
      source: 'default',
      risk: { allowUpTo: 'read-only', askUpTo: 'destructive' },
      contentTrust: { allowUpTo: 'untrusted', askUpTo: 'prompt-injection-prone' },
      undeclared: 'heuristic',
    });
    expect(verdictFor(policy, 'delete_note', destructive as never)).toBe('ask');
  });

  it('fills thresholds a risk file leaves out from the defaults', () => {
    const policy = parseInspectPolicy({ kind: 'risk', risk: { askUpTo: 'high-risk-write' } });
    expect(policy.summary).toMatchObject({
      risk: { allowUpTo: 'read-only', askUpTo: 'high-risk-write' },
    });
    expect(verdictFor(policy, 'delete_note', destructive as never)).toBe('deny');
  });

  it('decides every undeclared tool with undeclared: deny', () => {
    const policy = parseInspectPolicy({ kind: 'risk', undeclared: 'deny' });
    expect(verdictFor(policy, 'get_weather')).toBe('deny');
  });

  it('matches rules by glob, first match first, then the default', () => {
    const policy = parseInspectPolicy({
      kind: 'rules',
      $comment: 'first match wins',
      rules: [
        { tool: 'delete_*', decision: 'deny' },
        { tool: '*_note', decision: 'allow', reason: 'notes are fine' },
      ],
    });
    expect(verdictFor(policy, 'delete_note')).toBe('deny');
    expect(verdictFor(policy, 'save_note')).toBe('allow');
    expect(verdictFor(policy, 'send_message')).toBe('deny');
    expect(policy.summary).toEqual({
      kind: 'rules',
      source: 'file',
      rules: [
        { tool: 'delete_*', decision: 'deny' },
        { tool: '*_note', decision: 'allow', reason: 'notes are fine' },
      ],
      default: 'deny',
    });
  });

  it.for([
    ['a boolean threshold', { kind: 'risk', risk: { allowUpTo: true } }],
    ['a numeric kind', { kind: 1 }],
    ['null', null],
    ['a rule list of strings', { kind: 'rules', rules: ['delete_*'] }],
    ['an empty tool pattern', { kind: 'rules', rules: [{ tool: '', decision: 'deny' }] }],
    ['a numeric reason', { kind: 'rules', rules: [{ tool: '*', decision: 'deny', reason: 1 }] }],
  ] as const)('refuses %s', ([, value]) => {
    expect(() => parseInspectPolicy(value)).toThrow(PolicyFileError);
  });

  it('does not echo an unusual unknown key', () => {
    let message = '';
    try {
      parseInspectPolicy({ kind: 'risk', 'x\u001b[2J': 1 });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toContain('the policy has an unknown key (allowed: ');
    expect(message).not.toContain('\u001b');
  });
});

describe('policy file rules in every form', () => {
  const judge = (
    policy: ReturnType<typeof parseInspectPolicy>,
    toolName: string,
    origin: { server?: string; tool: string } | undefined,
    args: JsonObject = {},
  ) =>
    policy.authorizer.authorize({
      toolName,
      args,
      context,
      spec: {
        name: toolName,
        description: '',
        inputSchema: { type: 'object' },
        ...(origin === undefined ? {} : { origin }),
      },
      contract: undefined,
      effect: 'unknown',
    }) as { verdict: string; reason?: string };

  it('reads own names, offered names, server keys and when conditions, ignoring $comment', () => {
    const policy = parseInspectPolicy({
      kind: 'rules',
      rules: [
        { $comment: 'own name', tool: 'read_text_file', decision: 'deny', reason: 'r0' },
        { tool: 'gh__*', decision: 'ask', reason: 'r1' },
        { server: 'files', tool: 'list_*', decision: 'allow' },
        { tool: 'write_file', when: { path: { pathUnder: '/srv/project' } }, decision: 'allow' },
      ],
      default: 'deny',
    });
    const files = (tool: string) => ({ server: 'files', tool });
    expect(judge(policy, 'fs__read_text_file', files('read_text_file'))).toEqual({
      verdict: 'deny',
      reason: 'r0',
    });
    expect(judge(policy, 'gh__search', { server: 'github', tool: 'search' }).verdict).toBe('ask');
    expect(judge(policy, 'fs__list_directory', files('list_directory')).verdict).toBe('allow');
    expect(
      judge(policy, 'x__list_directory', { server: 'x', tool: 'list_directory' }).verdict,
    ).toBe('deny');
    expect(
      judge(policy, 'fs__write_file', files('write_file'), { path: '/srv/project/a' }).verdict,
    ).toBe('allow');
    expect(judge(policy, 'fs__write_file', files('write_file'), { path: '/etc/a' }).verdict).toBe(
      'deny',
    );
    expect(policy.summary).toMatchObject({
      rules: [
        { tool: 'read_text_file', decision: 'deny', reason: 'r0' },
        { tool: 'gh__*', decision: 'ask', reason: 'r1' },
        { server: 'files', tool: 'list_*', decision: 'allow' },
        { tool: 'write_file', decision: 'allow', conditional: true },
      ],
    });
    expect(
      policy.unmatchedRules([{ name: 'fs__read_text_file', origin: files('read_text_file') }]),
    ).toEqual([
      { index: 1, tool: 'gh__*' },
      { index: 2, tool: 'list_*', server: 'files' },
      { index: 3, tool: 'write_file' },
    ]);
  });

  it('warns about a rule that names no offered tool, not about one that names reads', () => {
    const policy = parseInspectPolicy({
      kind: 'rules',
      rules: [
        { tool: 'fs__resource:file:///etc/*', decision: 'deny' },
        { server: 'vault', tool: 'prompt:*', decision: 'deny' },
        { tool: 'resource:notes://*', decision: 'allow' },
        { tool: 'fs__prompt:review', decision: 'ask' },
        { tool: 'delete_*', decision: 'deny' },
        { tool: 'resources_list', decision: 'allow' },
      ],
    });
    const lines: string[] = [];
    const count = warnUnmatchedRules(
      policy,
      [{ name: 'fs__read_text_file', origin: { server: 'fs', tool: 'read_text_file' } }],
      (line) => lines.push(line),
    );
    expect(count).toBe(2);
    expect(lines).toEqual([
      expect.stringMatching(/^policy rules\[4\] \(tool "delete_\*"\) matches no offered tool/),
      expect.stringMatching(/^policy rules\[5\] \(tool "resources_list"\) matches no offered tool/),
    ]);
  });

  it.each([
    [
      'an unknown rule key',
      { tool: 'x', decision: 'deny', operation: 'read' },
      'rules[0]',
      /unknown key "operation" \(allowed: \$comment, tool, server, when, decision, reason, principal\)/,
    ],
    [
      'an unknown when operator',
      { tool: 'x', decision: 'deny', when: { path: { under: '/' } } },
      'rules[0].when."path"',
      /unknown operator "under"/,
    ],
    [
      'a relative pathUnder',
      { tool: 'x', decision: 'deny', when: { path: { pathUnder: 'a' } } },
      'rules[0].when."path"',
      /absolute POSIX paths/,
    ],
    ['neither tool nor server', { decision: 'deny' }, 'rules[0]', /give tool, server or both/],
  ])('refuses %s with POLICY_FILE_INVALID naming the place', (_label, rule, at, message) => {
    let caught: unknown;
    try {
      parseInspectPolicy({ kind: 'rules', rules: [rule] });
    } catch (error) {
      caught = error;
    }
    expect(PolicyFileError.isInstance(caught)).toBe(true);
    expect((caught as PolicyFileError).code).toBe('POLICY_FILE_INVALID');
    expect((caught as PolicyFileError).details).toEqual({ at });
    expect((caught as Error).message).toMatch(message);
  });
});

describe('the README policy files', () => {
  it('parses every policy file example of the README', async () => {
    const readme = await readFile(new URL('../../README.md', import.meta.url), 'utf8');
    const examples = [...readme.matchAll(/```json\n([\s\S]*?)```/g)]
      .map((match) => match[1] as string)
      .filter((text) => /"kind": "(risk|rules)"/.test(text));
    expect(examples.length).toBeGreaterThanOrEqual(4);
    for (const example of examples)
      expect(() => parseInspectPolicy(JSON.parse(example))).not.toThrow();
    // The flow guard's example is read with its section.
    expect(examples.some((text) => parseInspectPolicy(JSON.parse(text)).flow !== undefined)).toBe(
      true,
    );
  });
});

describe('loadInspectPolicy', () => {
  let folder: string;
  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'toolfence-policy-file-'));
    await mkdir(join(folder, 'a folder'));
    await writeFile(join(folder, 'not-json.json'), 'not json');
    await writeFile(join(folder, 'unknown-kind.json'), '{"kind":"nope"}');
    await writeFile(join(folder, 'large.json'), `{"kind":"risk","$comment":"${'x'.repeat(200)}"}`);
    await writeFile(join(folder, 'risk.json'), '{"kind":"risk"}');
  });
  afterAll(async () => {
    await rm(folder, { recursive: true, force: true });
  });

  it.each([
    ['a missing file', 'missing.json', undefined, /Cannot read the policy file \(ENOENT\)/],
    ['a folder', 'a folder', undefined, /must name a regular file/],
    ['a file that is not JSON', 'not-json.json', undefined, /not valid JSON/],
    ['a policy of an unknown kind', 'unknown-kind.json', undefined, /"kind" must be/],
    ['a file over maxBytes', 'large.json', 64, /larger than 64 bytes/],
  ])(
    'refuses %s with POLICY_FILE_INVALID, the message starting with the path',
    async (_name, file, maxBytes, message) => {
      const path = join(folder, file);
      const error = await loadInspectPolicy(path, maxBytes).catch((caught: unknown) => caught);
      expect(PolicyFileError.isInstance(error)).toBe(true);
      expect((error as PolicyFileError).code).toBe('POLICY_FILE_INVALID');
      expect((error as Error).message.startsWith(`--policy ${path}: `)).toBe(true);
      expect((error as Error).message).toMatch(message);
      expect((error as PolicyFileError).details).toMatchObject({ file: path });
    },
  );

  it('escapes control characters of the path in the message', async () => {
    const path = join(folder, 'bad\u001b[2Jname.json');
    const error = await loadInspectPolicy(path).catch((caught: unknown) => caught);
    expect((error as Error).message).toContain('bad\\u{1b}[2Jname.json');
    expect((error as Error).message).not.toContain('\u001b');
  });

  it('reads a valid file', async () => {
    await expect(loadInspectPolicy(join(folder, 'risk.json'))).resolves.toBeDefined();
  });
});

describe('principal rules with several trusted issuers (refuseIssuerlessPrincipalRules)', () => {
  const ISSUERS = ['https://a.example.com', 'https://b.example.com'];
  const refusal = (rules: unknown[], issuers: readonly string[] = ISSUERS): unknown => {
    try {
      refuseIssuerlessPrincipalRules(
        parseInspectPolicy({ kind: 'rules', rules }),
        issuers,
        '/p.json',
      );
      return undefined;
    } catch (error) {
      return error;
    }
  };

  it.each([
    ['a subject', { subject: 'alice' }, 'allow', 'principal.subject'],
    ['a claim', { claims: { groups: 'eng' } }, 'allow', 'principal.claims'],
    ['a subject', { subject: ['alice'] }, 'ask', 'principal.subject'],
    ['a claim', { claims: { scope: 'admin' } }, 'ask', 'principal.claims'],
  ])(
    'refuses an issuerless %s rule deciding %s, naming the rule, the issuers and the fix',
    (_what, principal, decision, names) => {
      const caught = refusal([
        { tool: 'tk__note', decision: 'allow' },
        { tool: 'tk__wipe', principal, decision },
      ]);
      expect(PolicyFileError.isInstance(caught)).toBe(true);
      const error = caught as PolicyFileError;
      expect(error.code).toBe('POLICY_FILE_INVALID');
      expect(error.details).toEqual({ at: 'rules[1].principal', file: '/p.json' });
      expect(error.message).toContain('--policy /p.json: Invalid policy file: rules[1]');
      expect(error.message).toContain('tool "tk__wipe"');
      expect(error.message).toContain(names);
      expect(error.message).toContain('https://a.example.com, https://b.example.com');
      expect(error.message).toContain('Add "issuer" to the rule');
    },
  );

  it('accepts the same rules with an issuer (one or a list), deny rules without one, and one trusted issuer', () => {
    expect(
      refusal([
        {
          tool: 'tk__wipe',
          principal: { subject: 'alice', issuer: ISSUERS[0] },
          decision: 'allow',
        },
        {
          tool: 'tk__wipe',
          principal: { claims: { groups: 'eng' }, issuer: ISSUERS },
          decision: 'ask',
        },
        { tool: 'tk__wipe', principal: { claims: { scope: 'readonly' } }, decision: 'deny' },
        { tool: 'tk__wipe', principal: { issuer: ISSUERS[1] }, decision: 'allow' },
      ]),
    ).toBeUndefined();
    expect(
      refusal(
        [{ tool: 'tk__wipe', principal: { subject: 'alice' }, decision: 'allow' }],
        [ISSUERS[0] as string],
      ),
    ).toBeUndefined();
    expect(refusal([{ tool: 'tk__wipe', decision: 'allow' }])).toBeUndefined();
  });

  it('a risk policy has no principal rules', () => {
    expect(() =>
      refuseIssuerlessPrincipalRules(defaultInspectPolicy(), ISSUERS, '/p.json'),
    ).not.toThrow();
  });
});
