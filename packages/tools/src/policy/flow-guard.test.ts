import { type ContentTrustLevel, defineContract, type RiskLevel } from '@toolfence/tool-contract';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from '../registry/configuration-error.js';
import { type ToolSpec, textResult } from '../registry/tool.js';
import { FlowGuard } from './flow-guard.js';

function spec(name: string, risk: RiskLevel, contentTrust: ContentTrustLevel): ToolSpec {
  return {
    name,
    description: name,
    inputSchema: { type: 'object' },
    contract: defineContract({ risk, contentTrust, idempotent: false, version: '1.0.0' }),
  };
}

const issue = spec('get_issue', 'read-only', 'prompt-injection-prone');
const repo = spec('get_file_contents', 'read-only', 'sensitive');
const publish = spec('create_pull_request', 'external-publication', 'trusted');
const ok = textResult('ok');

describe('FlowGuard', () => {
  it('asks for a sink in an exposed session and denies once it also holds private data', () => {
    const guard = new FlowGuard();
    expect(guard.check('s', publish, 'allow')).toBeUndefined();
    guard.record('s', issue, ok);
    const ask = guard.check('s', publish, 'allow');
    expect(ask).toMatchObject({
      verdict: 'ask',
      enforced: true,
      sink: { tool: 'create_pull_request' },
    });
    guard.record('s', repo, ok);
    const deny = guard.check('s', publish, 'allow');
    expect(deny?.verdict).toBe('deny');
    expect(deny?.reason).toContain('"get_issue"');
    expect(deny?.reason).toContain('"get_file_contents"');
    expect(deny?.reason).toContain('"create_pull_request"');
  });

  it('refuses an unknown option key', () => {
    expect(() => new FlowGuard({ maxSession: 3 } as never)).toThrow(ConfigurationError);
  });
});
