import { describe, expect, it } from 'vitest';
import { HttpTool } from '../builtin/http-tool.js';
import { ShellTool } from '../builtin/shell-tool.js';
import { McpServerConfig } from '../mcp/mcp-server-config.js';
import { McpServerRegistry } from '../mcp/mcp-server-registry.js';
import { AllowAllAuthorizer } from '../policy/authorizer.js';
import { CallBudget } from '../policy/call-budget.js';
import { RedisCallBudget } from '../policy/redis-call-budget.js';
import { RiskPolicy } from '../policy/risk-policy.js';
import { RuleBasedPolicy } from '../policy/rule-based-policy.js';
import { SkillLoader } from '../skills/skill-loader.js';
import { checkOptionKeys } from './option-keys.js';
import { AjvSchemaValidator } from './schema-validator.js';
import { ToolRegistry } from './tool-registry.js';

describe('checkOptionKeys', () => {
  it('accepts known keys and refuses the rest, suggesting the closest', () => {
    expect(() => checkOptionKeys({ readTimeout: 1 }, ['readTimeout'], 'X')).not.toThrow();
    expect(() => checkOptionKeys({ readTimout: 1 }, ['readTimeout', 'openTimeout'], 'X')).toThrow(
      'Unknown X option "readTimout" (did you mean "readTimeout"?); accepted: readTimeout, openTimeout',
    );
    expect(() => checkOptionKeys({ zzz: 1 }, ['readTimeout'], 'X')).toThrow(
      'Unknown X option "zzz"; accepted: readTimeout',
    );
    expect(() => checkOptionKeys({ ReadTimeout: undefined }, ['readTimeout'], 'X')).toThrow(
      /did you mean "readTimeout"/,
    );
  });

  it('refuses a renamed key with its new name and unit, even when undefined', () => {
    for (const value of [5, undefined]) {
      expect(() =>
        checkOptionKeys({ readTimeout: value }, ['readTimeoutMs'], 'X', undefined, {
          readTimeout: 'readTimeoutMs',
        }),
      ).toThrow(
        'X option "readTimeout" was renamed to "readTimeoutMs" (milliseconds; multiply a value in seconds by 1000)',
      );
    }
    expect(() =>
      checkOptionKeys({ toString: 1 }, ['a'], 'X', undefined, { readTimeout: 'readTimeoutMs' }),
    ).toThrow('Unknown X option "toString"');
  });

  it.each([null, 'x', 3, [1]])('refuses %j as options', (value) => {
    expect(() => checkOptionKeys(value, ['a'], 'X')).toThrow('X options must be an object');
  });
});

describe('public constructors refuse unknown option keys', () => {
  const authorizer = new AllowAllAuthorizer();
  it.each([
    [
      'ToolRegistry',
      () => new ToolRegistry({ authorizer, approvalTimeout: 5 } as never),
      'approvalTimeout',
    ],
    ['RiskPolicy', () => new RiskPolicy({ risks: {} } as never), 'risks'],
    [
      'RiskPolicy thresholds',
      () => new RiskPolicy({ risk: { allowUpto: 'read-only' } } as never),
      'allowUpto',
    ],
    ['RuleBasedPolicy', () => new RuleBasedPolicy([], { defaults: 'deny' } as never), 'defaults'],
    ['CallBudget', () => new CallBudget({ perrun: { maxCalls: 1 } } as never), 'perrun'],
    ['SkillLoader', () => new SkillLoader({ root: '/tmp', maxSkill: 1 } as never), 'maxSkill'],
    ['McpServerConfig', () => new McpServerConfig({ name: 'a', limit: {} } as never), 'limit'],
    ['McpServerRegistry', () => new McpServerRegistry({ onevent: () => {} } as never), 'onevent'],
    [
      'AjvSchemaValidator',
      () => new AjvSchemaValidator({ validateFormat: true } as never),
      'validateFormat',
    ],
  ])('%s', (_label, construct, key) => {
    let caught: unknown;
    try {
      construct();
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ details: { option: key } });
    expect((caught as Error).message).toContain(`Unknown`);
    expect((caught as Error).message).toContain('accepted:');
  });

  it('refuses RiskPolicy({ risk: "read-only" }), which was silently ignored', () => {
    expect(() => new RiskPolicy({ risk: 'read-only' } as never)).toThrow(
      'RiskPolicy risk options must be an object with the keys allowUpTo, askUpTo',
    );
  });
});

describe('time options are milliseconds, and the old seconds names are refused', () => {
  it.each([
    [
      'HttpTool maxTimeoutSeconds',
      () => new HttpTool({ allowedHosts: ['example.com'], maxTimeoutSeconds: 20 } as never),
      'maxTimeoutSeconds',
      'maxTimeoutMs',
    ],
    [
      'ShellTool maxTimeoutSeconds',
      () =>
        new ShellTool({
          workspace: '/tmp',
          allowedCommands: ['echo'],
          maxTimeoutSeconds: 60,
        } as never),
      'maxTimeoutSeconds',
      'maxTimeoutMs',
    ],
    [
      'RedisCallBudget ttlSeconds',
      () => new RedisCallBudget({ url: 'redis://127.0.0.1:1', ttlSeconds: 60 } as never),
      'ttlSeconds',
      'ttlMs',
    ],
  ])('%s', (_label, construct, oldKey, newKey) => {
    let caught: unknown;
    try {
      construct();
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ details: { option: oldKey } });
    expect((caught as Error).message).toContain(
      `"${oldKey}" was renamed to "${newKey}" (milliseconds`,
    );
  });
});
