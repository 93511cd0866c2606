import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FlowGuard } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import { FLOW_POLICY_KEYS, parseFlowPolicy } from './flow-config.js';
import { loadInspectPolicy, parseInspectPolicy } from './policy-file.js';
import { PolicyFileError } from './policy-file-error.js';

describe('the policy file flow section', () => {
  it('reads every key and keeps the permits', () => {
    const flow = parseFlowPolicy({
      $comment: 'memory may feed the publisher',
      enabled: true,
      mode: 'observe',
      sinks: ['mailer'],
      notSinks: ['repo__delete_branch'],
      untrusted: [{ server: 'web' }],
      sensitive: ['crm__get_contact'],
      trusted: [{ server: 'docs', tool: 'search' }],
      permit: [{ from: { server: 'memory' }, to: 'publisher__publish', $comment: 'reviewed' }],
      maxSessions: 500,
      maxSourcesPerSession: 4,
    });
    expect(flow).toEqual({
      enabled: true,
      mode: 'observe',
      sinks: ['mailer'],
      notSinks: ['repo__delete_branch'],
      untrusted: [{ server: 'web' }],
      sensitive: ['crm__get_contact'],
      trusted: [{ server: 'docs', tool: 'search' }],
      permit: [{ from: { server: 'memory' }, to: 'publisher__publish' }],
      maxSessions: 500,
      maxSourcesPerSession: 4,
    });
    expect(Object.isFrozen(flow.permit)).toBe(true);
  });

  it.each(FLOW_POLICY_KEYS.filter((key) => key !== '$comment' && key !== 'enabled'))(
    'passes %s on to FlowGuard, which takes it',
    (key) => {
      expect(() => new FlowGuard({ [key]: undefined })).not.toThrow();
    },
  );

  it('keeps enabled for itself: FlowGuard does not take it', () => {
    expect(() => new FlowGuard({ enabled: true } as never)).toThrow(/enabled/);
  });

  it('is absent from a policy file without it, and read in both kinds', () => {
    expect(parseInspectPolicy({ kind: 'risk' }).flow).toBeUndefined();
    expect(parseInspectPolicy({ kind: 'risk', flow: { enabled: false } }).flow).toEqual({
      enabled: false,
    });
    expect(
      parseInspectPolicy({ kind: 'rules', rules: [], flow: { permit: [{ from: 'a', to: 'b' }] } })
        .flow,
    ).toEqual({ permit: [{ from: 'a', to: 'b' }] });
  });

  it.each([
    ['a misspelled key', { sink: ['x'] }, /"sink" \(did you mean "sinks"\?\)/],
    ['a key in the wrong case', { NotSinks: [] }, /did you mean "notSinks"/],
    ['an unknown key far from any', { allowEverything: true }, /"allowEverything"; accepted: /],
    ['a permit key misspelled', { permit: [{ form: 'a', to: 'b' }] }, /did you mean "from"/],
    ['enabled not a boolean', { enabled: 'no' }, /flow\.enabled must be true or false/],
    ['an unknown mode', { mode: 'audit' }, /flow\.mode must be "enforce" or "observe"/],
    ['sinks not an array', { sinks: 'publisher' }, /flow\.sinks must be an array/],
    ['an empty selector', { untrusted: [''] }, /flow\.untrusted\[0\] must be a tool selector/],
    ['a selector not a string', { sensitive: [7] }, /flow\.sensitive\[0\] must be a tool selector/],
    ['a permit without to', { permit: [{ from: 'a' }] }, /flow\.permit\[0\]\.to must be/],
    ['a selector object misspelled', { sinks: [{ servr: 'x' }] }, /did you mean "server"/],
    ['an empty selector object', { trusted: [{}] }, /flow\.trusted\[0\] must be a tool selector/],
    [
      'a selector server not a string',
      { permit: [{ from: { server: 1 }, to: 'b' }] },
      /flow\.permit\[0\]\.from\.server must be/,
    ],
    [
      'maxSourcesPerSession a fraction',
      { maxSourcesPerSession: 1.5 },
      /flow\.maxSourcesPerSession must be/,
    ],
    ['a permit not an object', { permit: ['a->b'] }, /flow\.permit\[0\] must be an object/],
    ['maxSessions zero', { maxSessions: 0 }, /flow\.maxSessions must be a whole number/],
    ['flow not an object', 'on', /flow must be an object/],
  ])('refuses %s', (_name, flow, message) => {
    let caught: unknown;
    try {
      parseInspectPolicy({ kind: 'risk', flow });
    } catch (error) {
      caught = error;
    }
    expect(PolicyFileError.isInstance(caught)).toBe(true);
    expect((caught as PolicyFileError).code).toBe('POLICY_FILE_INVALID');
    expect((caught as Error).message).toMatch(message);
  });

  it('names the policy file in the error serve prints', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'toolfence-flow-policy-'));
    try {
      const path = join(folder, 'policy.json');
      await writeFile(path, JSON.stringify({ kind: 'risk', flow: { permits: [] } }));
      const error = await loadInspectPolicy(path).catch((caught: unknown) => caught);
      expect(PolicyFileError.isInstance(error)).toBe(true);
      expect((error as Error).message).toContain(path);
      expect((error as Error).message).toMatch(/"permits" \(did you mean "permit"\?\)/);
      expect((error as PolicyFileError).details).toMatchObject({ at: 'flow', file: path });
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });
});
