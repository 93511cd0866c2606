import {
  type AskableTool,
  type AuthorizationRequest,
  type Authorizer,
  PERMISSION_VERDICTS,
  type PermissionDecision,
  type PermissionVerdict,
  permission,
} from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import {
  type ArgumentConditions,
  type CompiledConditions,
  compileArgumentConditions,
} from './argument-conditions.js';
import {
  compilePrincipalMatcher,
  type Principal,
  type PrincipalMatcher,
  principalOf,
} from './principal.js';
import { compileToolSelector, originOf, type ToolIdentity } from './tool-selector.js';

/** The keys a {@link PolicyRule} may have. */
export const POLICY_RULE_KEYS: readonly string[] = Object.freeze([
  'tool',
  'server',
  'operation',
  'when',
  'decision',
  'reason',
  'principal',
]);

/** One rule of a {@link RuleBasedPolicy}. A rule matches when every given condition holds. */
export interface PolicyRule {
  /**
   * Tool name or glob (`*` any run of characters, `?` one character; `*` alone for any). With
   * `__` it is the registry name (a gateway's offered `server__tool`); without, the tool's own
   * name on its server (`spec.origin.tool`, any server; a local tool's registry name). Required
   * unless `server` is given (then default `*`).
   */
  readonly tool?: string;
  /**
   * Server name or glob (`spec.origin.server`): the rule matches only tools of that server, and
   * `tool` is their own name. A tool without an origin never matches.
   */
  readonly server?: string;
  /**
   * The call's operation (compared case-insensitively), one value or a list: the operation the
   * call performs (see {@link RuleBasedPolicyOptions.operationArguments}). A rule with
   * `operation` only matches calls that have one.
   */
  readonly operation?: string | readonly string[];
  /**
   * A further condition on the call: a predicate (throwing denies), or declarative
   * {@link ArgumentConditions}. A declarative condition that cannot be evaluated (argument
   * missing, wrong type, a path it cannot decide) does not match an `allow` rule and does match a
   * `deny` or `ask` rule.
   */
  readonly when?: ((request: AuthorizationRequest) => boolean) | ArgumentConditions;
  /**
   * Who the rule applies to (see {@link PrincipalMatcher}): the call's principal, read from
   * `context.metadata.principal` (a gateway with identity puts the validated caller there). A
   * rule with `principal` never matches a call without one.
   */
  readonly principal?: PrincipalMatcher;
  /** The verdict when this rule is the first to match. */
  readonly decision: PermissionVerdict;
  /** Log-safe reason carried by the decision (the gateway shows it to the model). Default `rule <index>`. */
  readonly reason?: string;
}

/** A rule that names no tool of a listing (see {@link RuleBasedPolicy.unmatchedRules}). */
export interface UnmatchedRule {
  /** The rule's index in the list. */
  readonly index: number;
  /** Its `tool`, if given. */
  readonly tool?: string;
  /** Its `server`, if given. */
  readonly server?: string;
}

/** Options of {@link RuleBasedPolicy}. */
export interface RuleBasedPolicyOptions {
  /** The decision when no rule matches. Default `deny`. */
  readonly default?: PermissionVerdict;
  /**
   * Argument that holds the operation, per tool name. Default: the operation the registry
   * resolved from the tool's `operationContracts` (`AuthorizationRequest.operation`: what the
   * call performs, defaults included), else the argument named by the spec's
   * `operationArgument`; a tool with none of these has no operation.
   */
  readonly operationArguments?: Readonly<Record<string, string>>;
}

interface CompiledRule {
  readonly matchTool: (identity: ToolIdentity) => boolean;
  readonly tool: string | undefined;
  readonly server: string | undefined;
  readonly operations: readonly string[] | undefined;
  readonly principal: ((principal: Principal | undefined) => boolean) | undefined;
  readonly when: ((request: AuthorizationRequest) => boolean) | undefined;
  readonly conditions: CompiledConditions | undefined;
  readonly decision: PermissionDecision;
  /** The decision when a declarative condition cannot be evaluated (deny and ask rules). */
  readonly undecided: PermissionDecision;
}

/**
 * First-match rules on tool name (both forms, see {@link PolicyRule.tool}), server, operation and
 * a condition. Rules are checked once at construction ({@link ConfigurationError}, also for an
 * unknown key); with no match the `default` applies (`deny`).
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
    const identity: ToolIdentity = {
      name: request.toolName,
      origin: originOf(request.spec?.origin),
    };
    let principal: Principal | undefined;
    let principalRead = false;
    for (const rule of this.#rules) {
      if (!rule.matchTool(identity)) continue;
      if (rule.principal !== undefined) {
        if (!principalRead) {
          principal = principalOf(request.context);
          principalRead = true;
        }
        if (!rule.principal(principal)) continue;
      }
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
      if (rule.conditions !== undefined) {
        const allow = rule.decision.verdict === 'allow';
        const result = rule.conditions(request.args, allow ? 'every' : 'some');
        if (result === false) continue;
        if (result === 'unknown') {
          if (allow) continue;
          return rule.undecided;
        }
      }
      return rule.decision;
    }
    return this.#default;
  }

  /**
   * Whether some call of `tool` by `principal` (none: a caller without identity) could be allowed
   * or asked: false only when every rule that applies denies it whatever the arguments (the first
   * rule that matches the tool and the caller without a condition denies, and no conditional
   * allow or ask rule comes before it; or no rule applies and the default is `deny`). A gateway
   * shows a caller only the tools this is true for.
   */
  mayPermit(tool: ToolIdentity, principal?: Principal): boolean {
    for (const rule of this.#rules) {
      if (!rule.matchTool(tool)) continue;
      if (rule.principal !== undefined && !rule.principal(principal)) continue;
      const conditional =
        rule.operations !== undefined || rule.when !== undefined || rule.conditions !== undefined;
      if (rule.decision.verdict !== 'deny') return true;
      if (!conditional) return false;
    }
    return this.#default.verdict !== 'deny';
  }

  /**
   * Whether some call of the tool could get an `ask` verdict (see `Authorizer.mayAsk`): false
   * only when no rule that applies to the tool asks, up to the first rule that applies to every
   * call of it (no caller, operation, predicate or argument condition), or up to the default
   * when there is no such rule and the default is not `ask`.
   */
  mayAsk(tool: AskableTool): boolean {
    const identity: ToolIdentity = { name: tool.toolName, origin: originOf(tool.spec?.origin) };
    for (const rule of this.#rules) {
      if (!rule.matchTool(identity)) continue;
      if (rule.decision.verdict === 'ask' || rule.undecided.verdict === 'ask') return true;
      if (
        rule.principal === undefined &&
        rule.operations === undefined &&
        rule.when === undefined &&
        rule.conditions === undefined
      ) {
        return false;
      }
    }
    return this.#default.verdict === 'ask';
  }

  /**
   * The rules whose tool selector names none of `tools` (conditions are not looked at): a typo, a
   * server's own name given with the wrong server, a tool the server no longer lists.
   */
  unmatchedRules(tools: readonly ToolIdentity[]): UnmatchedRule[] {
    const unmatched: UnmatchedRule[] = [];
    for (const [index, rule] of this.#rules.entries()) {
      if (tools.some((tool) => rule.matchTool(tool))) continue;
      unmatched.push({
        index,
        ...(rule.tool === undefined ? {} : { tool: rule.tool }),
        ...(rule.server === undefined ? {} : { server: rule.server }),
      });
    }
    return unmatched;
  }

  #operationOf(request: AuthorizationRequest): string | undefined {
    const named = this.#operationArguments.get(request.toolName);
    // The operation the call performs, as the registry resolved it from the tool's per-operation
    // contracts (an HttpTool call without `method` is a GET): a rule on `GET` must judge it, and
    // the raw argument would be absent.
    if (named === undefined && typeof request.operation === 'string') {
      return request.operation.toLowerCase();
    }
    const argument = named ?? request.spec.operationArgument;
    if (argument === undefined || !Object.hasOwn(request.args, argument)) return undefined;
    const value = request.args[argument];
    return typeof value === 'string' ? value.toLowerCase() : undefined;
  }
}

function isVerdict(value: unknown): value is PermissionVerdict {
  return (PERMISSION_VERDICTS as readonly unknown[]).includes(value);
}

function compileRule(rule: PolicyRule, index: number): CompiledRule {
  const at = `rules[${index}]`;
  const fail = (what: string): never => {
    throw new ConfigurationError(`${at}: ${what}`, { details: { option: at } });
  };
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) fail('must be an object');
  checkOptionKeys(
    rule,
    POLICY_RULE_KEYS,
    `RuleBasedPolicy ${at}`,
    (message, key) => new ConfigurationError(message, { details: { option: `${at}.${key}` } }),
  );
  if (rule.tool !== undefined && (typeof rule.tool !== 'string' || rule.tool === '')) {
    fail('tool must be a non-empty string');
  }
  if (rule.server !== undefined && (typeof rule.server !== 'string' || rule.server === '')) {
    fail('server must be a non-empty string');
  }
  if (rule.tool === undefined && rule.server === undefined) fail('give tool, server or both');
  if (!isVerdict(rule.decision)) fail("decision must be 'allow', 'deny' or 'ask'");
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
  const predicate = typeof rule.when === 'function' ? rule.when : undefined;
  const conditions =
    rule.when === undefined || predicate !== undefined
      ? undefined
      : compileArgumentConditions(rule.when, `${at}.when`);
  const principal =
    rule.principal === undefined
      ? undefined
      : compilePrincipalMatcher(rule.principal, `${at}.principal`);
  const reason = rule.reason ?? `rule ${index}`;
  return {
    principal,
    matchTool: compileToolSelector({ tool: rule.tool, server: rule.server }),
    tool: rule.tool,
    server: rule.server,
    operations,
    when: predicate,
    conditions,
    decision: permission(rule.decision, reason),
    undecided: permission(
      rule.decision,
      `${reason} (a condition on the arguments could not be evaluated)`,
    ),
  };
}
