import { describe, expect, it } from 'vitest';
import { FileSystemTool } from '../builtin/file-system-tool.js';
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
import { checkOptionKeys, ownOptions } from './option-keys.js';
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

/** Sets `Object.prototype[key]` for the length of `body`, then removes it whatever happens. */
function withPollutedPrototype(key: string, value: unknown, body: () => void): void {
  Object.defineProperty(Object.prototype, key, {
    value,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  try {
    body();
  } finally {
    delete (Object.prototype as Record<string, unknown>)[key];
  }
}

describe('options are read from own keys only (a polluted Object.prototype is refused)', () => {
  it('checkOptionKeys refuses an accepted key that only the prototype chain holds', () => {
    withPollutedPrototype('allowWrite', true, () => {
      expect(() => checkOptionKeys({ root: '/tmp' }, ['root', 'allowWrite'], 'X')).toThrow(
        'X option "allowWrite" is inherited from the prototype chain, not set on the options object',
      );
      // Set as an own key, the same name is the caller's choice.
      expect(() =>
        checkOptionKeys({ root: '/tmp', allowWrite: false }, ['root', 'allowWrite'], 'X'),
      ).not.toThrow();
    });
    const inherited = Object.create({ allowWrite: true }) as object;
    expect(() => checkOptionKeys(inherited, ['allowWrite'], 'X')).toThrow(/inherited/);
  });

  it('ownOptions copies own keys into an object without a prototype', () => {
    withPollutedPrototype('allowWrite', true, () => {
      const copy = ownOptions({ root: '/tmp' } as { root: string; allowWrite?: boolean });
      expect(Object.getPrototypeOf(copy)).toBe(null);
      expect(copy.allowWrite).toBeUndefined();
      expect(copy.root).toBe('/tmp');
    });
  });

  it.each([
    ['FileSystemTool', 'allowWrite', () => new FileSystemTool({ root: '/tmp' })],
    ['FileSystemTool', 'allowHardLinks', () => new FileSystemTool({ root: '/tmp' })],
    ['FileSystemTool', 'symlinks', () => new FileSystemTool({ root: '/tmp' })],
    [
      'ToolRegistry',
      'approvalTimeoutMs',
      () => new ToolRegistry({ authorizer: new AllowAllAuthorizer() }),
    ],
    ['RiskPolicy', 'risk', () => new RiskPolicy({})],
    ['RuleBasedPolicy', 'default', () => new RuleBasedPolicy([], {})],
  ])('%s refuses an inherited %s', (_label, key, construct) => {
    withPollutedPrototype(key, key === 'symlinks' ? 'follow-inside' : true, () => {
      let caught: unknown;
      try {
        construct();
      } catch (error) {
        caught = error;
      }
      expect(caught).toMatchObject({ details: { option: key } });
      expect((caught as Error).message).toContain('inherited');
    });
  });
});
