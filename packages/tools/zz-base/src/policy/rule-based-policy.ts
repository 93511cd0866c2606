import {
  type AuthorizationRequest,
  type Authorizer,
  PERMISSION_VERDICTS,
  type PermissionDecision,
  type PermissionVerdict,
  permission,
} from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';

/** One rule of a {@link RuleBasedPolicy}. A rule matches when every given condition holds. */
export interface PolicyRule {
  /** Tool name: exact, `*` for any, or a glob (`*` any run of characters, `?` one character). */
  readonly tool: string;
  /**
   * The call's operation (compared case-insensitively), one value or a list. A rule with
   * `operation` only matches calls whose operation argument is a string.
   */
  readonly operation?: string | readonly string[];
  /** A further condition on the call (its context, arguments, effect). Throwing denies. */
  readonly when?: (request: AuthorizationRequest) => boolean;
  /** The verdict when this rule is the first to match. */
  readonly decision: PermissionVerdict;
  /** Log-safe reason carried by the decision. Default `rule <index>`. */
  readonly reason?: string;
}

/** Options of {@link RuleBasedPolicy}. */
export interface RuleBasedPolicyOptions {
  /** The decision when no rule matches. Default `deny`. */
  readonly default?: PermissionVerdict;
  /**
   * Argument that holds the operation, per tool name. Default: the tool spec's
   * `operationArgument`; a tool without either has no operation.
   */
  readonly operationArguments?: Readonly<Record<string, string>>;
}

interface CompiledRule {
  readonly matchTool: (name: string) => boolean;
  readonly operations: readonly string[] | undefined;
  readonly when: ((request: AuthorizationRequest) => boolean) | undefined;
  readonly decision: PermissionDecision;
}

/**
 * First-match rules on tool name, operation and an optional predicate. Rules are checked once at
 * construction ({@link ConfigurationError}); with no match the `default` applies (`deny`).
 */
export class RuleBasedPolicy implements Authorizer {
  readonly #rules: readonly CompiledRule[];
  readonly #default: PermissionDecision;
  readonly #operationArguments: ReadonlyMap<string, string>;

  /** Compiles the rules in order; throws {@link ConfigurationError} for a bad rule or option. */
  constructor(rules: readonly PolicyRule[], options: RuleBasedPolicyOptions = {}) {
    checkOptionKeys(options, ['default', 'operationArguments'], 'RuleBasedPolicy');
    if (!Array.isArray(rules)) {
      throw new ConfigurationError('RuleBasedPolicy needs an array of rules', {
        details: { option: 'rules' },
      });
    }
    this.#rules = (rules as readonly PolicyRule[]).map(compileRule);
    const fallback: unknown = options.default ?? 'deny';
    if (!isVerdict(fallback)) {
      throw new ConfigurationError("default must be 'allow', 'deny' or 'ask'", {
        details: { option: 'default' },
      });
    }
    this.#default = permission(fallback, 'no rule matched');
    const operationArguments = new Map<string, string>();
    for (const [tool, argument] of Object.entries(options.operationArguments ?? {})) {
      if (typeof argument !== 'string' || argument === '') {
        throw new ConfigurationError('operationArguments values must be argument names', {
          details: { option: 'operationArguments' },
        });
      }
      operationArguments.set(tool, argument);
    }
    this.#operationArguments = operationArguments;
  }

  /** Returns the first matching rule's decision (`deny` if its predicate throws), else the default. */
  authorize(request: AuthorizationRequest): PermissionDecision {
    let operation: string | undefined;
    let operationRead = false;
    for (const rule of this.#rules) {
      if (!rule.matchTool(request.toolName)) continue;
      if (rule.operations !== undefined) {
        if (!operationRead) {
          operation = this.#operationOf(request);
          operationRead = true;
        }
        if (operation === undefined || !rule.operations.includes(operation)) continue;
      }
      if (rule.when !== undefined) {
        let holds: boolean;
        try {
          holds = rule.when(request) === true;
        } catch {
          return permission('deny', 'rule predicate failed');
        }
        if (!holds) continue;
      }
      return rule.decision;
    }
    return this.#default;
  }

  #operationOf(request: AuthorizationRequest): string | undefined {
    const argument =
      this.#operationArguments.get(request.toolName) ?? request.spec.operationArgument;
    if (argument === undefined || !Object.hasOwn(request.args, argument)) return undefined;
    const value = request.args[argument];
    return typeof value === 'string' ? value.toLowerCase() : undefined;
  }
}

function isVerdict(value: unknown): value is PermissionVerdict {
  return (PERMISSION_VERDICTS as readonly unknown[]).includes(value);
}

function compileRule(rule: PolicyRule, index: number): CompiledRule {
  const fail = (what: string): never => {
    throw new ConfigurationError(`rules[${index}]: ${what}`, {
      details: { option: `rules[${index}]` },
    });
  };
  if (typeof rule !== 'object' || rule === null) fail('must be an object');
  if (typeof rule.tool !== 'string' || rule.tool === '') fail('tool must be a non-empty string');
  if (!isVerdict(rule.decision)) fail("decision must be 'allow', 'deny' or 'ask'");
  if (rule.when !== undefined && typeof rule.when !== 'function') fail('when must be a function');
  if (rule.reason !== undefined && typeof rule.reason !== 'string') fail('reason must be a string');
  let operations: readonly string[] | undefined;
  if (rule.operation !== undefined) {
    const list: readonly unknown[] = Array.isArray(rule.operation)
      ? rule.operation
      : [rule.operation];
    if (list.length === 0 || list.some((item) => typeof item !== 'string')) {
      fail('operation must be a string or a non-empty list of strings');
    }
    operations = (list as readonly string[]).map((item) => item.toLowerCase());
  }
  return {
    matchTool: toolMatcher(rule.tool),
    operations,
    when: rule.when,
    decision: permission(rule.decision, rule.reason ?? `rule ${index}`),
  };
}

/** `*` → any; no wildcard → exact; else a glob anchored at both ends. */
export function toolMatcher(pattern: string): (name: string) => boolean {
  if (pattern === '*') return () => true;
  if (!/[*?]/.test(pattern)) return (name) => name === pattern;
  let source = '^';
  for (const character of pattern) {
    if (character === '*') source += '[\\s\\S]*';
    else if (character === '?') source += '[\\s\\S]';
    else source += character.replace(/[\\^$.|+()[\]{}-]/g, '\\$&');
  }
  const regex = new RegExp(`${source}$`, 'u');
  return (name) => regex.test(name);
}
