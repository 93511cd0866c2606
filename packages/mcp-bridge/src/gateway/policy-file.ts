// The policy file of `toolfence-mcp serve` and `inspect` (`--policy FILE`): one format, one
// loader, and the matching of `@toolfence/tools`' RuleBasedPolicy, so both commands give the same
// verdict for the same file and tool.
import { open } from 'node:fs/promises';
import type { ContentTrustLevel, RiskLevel } from '@toolfence/tool-contract';
import {
  type Authorizer,
  DEFAULT_CONTENT_TRUST_THRESHOLDS,
  DEFAULT_RISK_THRESHOLDS,
  type PolicyRule,
  RiskPolicy,
  type RiskThresholds,
  RuleBasedPolicy,
  type ToolIdentity,
  type UnmatchedRule,
} from '@toolfence/tools/core';
import { isRecord } from '../is-record.js';
import { type GatewayFlowSettings, parseFlowPolicy } from './flow-config.js';
import { PolicyFileError } from './policy-file-error.js';
import { isReadName } from './read-name.js';
import { shownPath } from './shown-path.js';

/** Largest policy file `--policy` reads, in bytes. */
export const MAX_POLICY_FILE_BYTES: number = 1024 * 1024;

/** The keys a rule of a `"kind": "rules"` policy file may have. */
export const POLICY_FILE_RULE_KEYS: readonly string[] = Object.freeze([
  '$comment',
  'tool',
  'server',
  'when',
  'decision',
  'reason',
  'principal',
]);

/** The policy a report was judged against, as printed in `--json`. */
export type InspectPolicySummary =
  | {
      readonly kind: 'risk';
      readonly source: 'default' | 'file';
      readonly risk: Required<RiskThresholds<RiskLevel>>;
      readonly contentTrust: Required<RiskThresholds<ContentTrustLevel>>;
      readonly undeclared: 'heuristic' | 'ask' | 'deny';
    }
  | {
      readonly kind: 'rules';
      readonly source: 'file';
      readonly rules: readonly {
        readonly tool?: string;
        readonly server?: string;
        readonly decision: string;
        readonly reason?: string;
        /** True when the rule has a `when`: its verdict depends on the call's arguments. */
        readonly conditional?: true;
      }[];
      readonly default: 'allow' | 'ask' | 'deny';
    };

/** A loaded policy: the authorizer that judges each tool, and what to print about it. */
export interface InspectPolicy {
  readonly authorizer: Authorizer;
  readonly summary: InspectPolicySummary;
  /**
   * The rules that name none of `tools` (a rules policy; none for a risk policy): warned about by
   * `serve` at start and at every reload, and by `inspect`.
   */
  readonly unmatchedRules: (tools: readonly ToolIdentity[]) => readonly UnmatchedRule[];
  /** The file's `flow` section (the gateway's flow guard); absent: the guard's defaults. */
  readonly flow?: GatewayFlowSettings;
  /**
   * The claims the rules' `principal.claims` name, with the rule's index (a rules policy): each
   * must be kept in the principal (`gateway.httpAuth.principalClaims`), see
   * {@link refuseUnkeptPrincipalClaims}.
   */
  readonly principalClaims?: readonly { readonly index: number; readonly claim: string }[];
  /**
   * The allow and ask rules whose `principal` names `subject` or `claims` but no `issuer` (a rules
   * policy): refused when the gateway trusts more than one issuer, see
   * {@link refuseIssuerlessPrincipalRules}.
   */
  readonly issuerlessPrincipalRules?: readonly IssuerlessPrincipalRule[];
}

/** An allow or ask rule whose `principal` matches a subject or claims from any issuer. */
export interface IssuerlessPrincipalRule {
  /** The rule's index in `rules`. */
  readonly index: number;
  /** Its `tool`, when it has one. */
  readonly tool?: string;
  /** Its `server`, when it has one. */
  readonly server?: string;
  /** Its decision. */
  readonly decision: 'allow' | 'ask';
  /** What it matches without an issuer: `subject`, `claims` or both. */
  readonly names: readonly ('subject' | 'claims')[];
}

function invalid(message: string, at?: string, cause?: unknown): PolicyFileError {
  return new PolicyFileError(`Invalid policy file: ${message}`, {
    ...(at === undefined ? {} : { details: { at } }),
    ...(cause === undefined ? {} : { cause }),
  });
}

function onlyKeys(record: Record<string, unknown>, allowed: readonly string[], at: string): void {
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) {
      const shown = /^[\w$.-]{1,40}$/.test(key) ? ` "${key}"` : '';
      throw invalid(`${at} has an unknown key${shown} (allowed: ${allowed.join(', ')})`, at);
    }
  }
}

function configurationMessage(error: unknown): string {
  return error instanceof Error ? error.message : 'rejected';
}

function configurationAt(error: unknown): string | undefined {
  const option = (error as { details?: { option?: unknown } }).details?.option;
  return typeof option === 'string' ? option : undefined;
}

const NO_UNMATCHED = (): readonly UnmatchedRule[] => [];

/** RiskPolicy with its defaults: the policy used when `--policy` is not given. */
export function defaultInspectPolicy(): InspectPolicy {
  return {
    authorizer: new RiskPolicy(),
    unmatchedRules: NO_UNMATCHED,
    summary: {
      kind: 'risk',
      source: 'default',
      risk: { ...DEFAULT_RISK_THRESHOLDS },
      contentTrust: { ...DEFAULT_CONTENT_TRUST_THRESHOLDS },
      undeclared: 'heuristic',
    },
  };
}

/**
 * Builds a policy from a parsed policy file (see the README): `{ "kind": "risk", ... }` for a
 * `RiskPolicy`, `{ "kind": "rules", ... }` for a `RuleBasedPolicy`. Throws {@link PolicyFileError}.
 */
export function parseInspectPolicy(value: unknown): InspectPolicy {
  if (!isRecord(value)) throw invalid('the top level must be a JSON object');
  if (value.kind === 'risk') {
    onlyKeys(
      value,
      ['$comment', 'kind', 'risk', 'contentTrust', 'undeclared', 'flow'],
      'the policy',
    );
    const flow = value.flow === undefined ? undefined : parseFlowPolicy(value.flow);
    for (const key of ['risk', 'contentTrust'] as const) {
      if (value[key] === undefined) continue;
      if (!isRecord(value[key])) throw invalid(`${key} must be an object`, key);
      onlyKeys(value[key], ['allowUpTo', 'askUpTo'], key);
    }
    const risk = { ...DEFAULT_RISK_THRESHOLDS, ...(value.risk as object | undefined) } as Required<
      RiskThresholds<RiskLevel>
    >;
    const contentTrust = {
      ...DEFAULT_CONTENT_TRUST_THRESHOLDS,
      ...(value.contentTrust as object | undefined),
    } as Required<RiskThresholds<ContentTrustLevel>>;
    const undeclared = (value.undeclared ?? 'heuristic') as 'heuristic' | 'ask' | 'deny';
    let authorizer: RiskPolicy;
    try {
      authorizer = new RiskPolicy({ risk, contentTrust, undeclared });
    } catch (error) {
      throw invalid(configurationMessage(error), configurationAt(error), error);
    }
    return {
      authorizer,
      unmatchedRules: NO_UNMATCHED,
      summary: { kind: 'risk', source: 'file', risk, contentTrust, undeclared },
      ...(flow === undefined ? {} : { flow }),
    };
  }
  if (value.kind === 'rules') {
    onlyKeys(value, ['$comment', 'kind', 'rules', 'default', 'flow'], 'the policy');
    const flow = value.flow === undefined ? undefined : parseFlowPolicy(value.flow);
    if (!Array.isArray(value.rules)) throw invalid('rules must be an array', 'rules');
    const rules: PolicyRule[] = [];
    for (const [index, rule] of value.rules.entries()) {
      const at = `rules[${index}]`;
      if (!isRecord(rule)) throw invalid(`${at} must be an object`, at);
      onlyKeys(rule, POLICY_FILE_RULE_KEYS, at);
      const { $comment: _comment, ...checked } = rule;
      rules.push(checked as unknown as PolicyRule);
    }
    const principalClaims: { index: number; claim: string }[] = [];
    for (const [index, rule] of rules.entries()) {
      const claims = (rule.principal as { claims?: unknown } | undefined)?.claims;
      if (isRecord(claims)) {
        for (const claim of Object.keys(claims)) principalClaims.push({ index, claim });
      }
    }
    // A deny rule matching a subject or claim from every issuer only refuses more; an allow or
    // ask rule would grant it to whoever another trusted issuer names so.
    const issuerlessPrincipalRules: IssuerlessPrincipalRule[] = [];
    for (const [index, rule] of rules.entries()) {
      const principal = rule.principal as Record<string, unknown> | undefined;
      if (!isRecord(principal) || principal.issuer !== undefined) continue;
      if (rule.decision !== 'allow' && rule.decision !== 'ask') continue;
      const names = (['subject', 'claims'] as const).filter((key) => principal[key] !== undefined);
      if (names.length === 0) continue;
      issuerlessPrincipalRules.push({
        index,
        ...(typeof rule.tool === 'string' ? { tool: rule.tool } : {}),
        ...(typeof rule.server === 'string' ? { server: rule.server } : {}),
        decision: rule.decision,
        names,
      });
    }
    const fallback = (value.default ?? 'deny') as 'allow' | 'ask' | 'deny';
    let authorizer: RuleBasedPolicy;
    try {
      authorizer = new RuleBasedPolicy(rules, { default: fallback });
    } catch (error) {
      throw invalid(configurationMessage(error), configurationAt(error), error);
    }
    return {
      authorizer,
      unmatchedRules: (tools) => authorizer.unmatchedRules(tools),
      principalClaims,
      issuerlessPrincipalRules,
      summary: {
        kind: 'rules',
        source: 'file',
        rules: rules.map((rule) => ({
          ...(rule.tool === undefined ? {} : { tool: rule.tool }),
          ...(rule.server === undefined ? {} : { server: rule.server }),
          decision: rule.decision,
          ...(rule.reason === undefined ? {} : { reason: rule.reason }),
          ...(rule.when === undefined ? {} : { conditional: true as const }),
        })),
        default: fallback,
      },
      ...(flow === undefined ? {} : { flow }),
    };
  }
  throw invalid('"kind" must be "risk" or "rules"');
}

/** How a rule is named in a warning: its index, `tool` and `server` (JSON-quoted, cut). */
function describeRule(rule: UnmatchedRule): string {
  const quote = (text: string) => JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}…` : text);
  const parts = [
    ...(rule.tool === undefined ? [] : [`tool ${quote(rule.tool)}`]),
    ...(rule.server === undefined ? [] : [`server ${quote(rule.server)}`]),
  ];
  return `rules[${rule.index}] (${parts.join(', ')})`;
}

/**
 * True when a rule names a read (`prompts/get`, `resources/read`) rather than a tool: its own name
 * (after `__`, or the whole name without one) starts with `prompt:` or `resource:`, as the read
 * names the gateway judges do (`fs__resource:file:///etc/*`, `{ "server": "vault", "tool":
 * "prompt:*" }`). Reads are not offered tools, so such a rule cannot be checked against them.
 */
function namesRead(rule: UnmatchedRule): boolean {
  const tool = rule.tool;
  if (tool === undefined) return false;
  const split = rule.server === undefined ? tool.indexOf('__') : -1;
  const own = split === -1 ? tool : tool.slice(split + 2);
  return isReadName(own);
}

/**
 * Writes one warning line for each rule of `policy` that names none of `tools` (the offered
 * tools of `serve`, or the inspected server's); returns how many. A rule that names reads
 * (`…resource:…`, `…prompt:…`) is not warned about: reads are not tools.
 */
export function warnUnmatchedRules(
  policy: InspectPolicy,
  tools: readonly ToolIdentity[],
  warn: (line: string) => void,
): number {
  const unmatched = policy.unmatchedRules(tools).filter((rule) => !namesRead(rule));
  for (const rule of unmatched) {
    warn(
      `policy ${describeRule(rule)} matches no offered tool: a name without "__" is the server's own tool name, SERVER__tool the offered name, "server" the config's server name`,
    );
  }
  return unmatched.length;
}

/**
 * Refuses (`POLICY_FILE_INVALID`, naming the rule, the claim and the setting) a policy whose rule
 * reads a claim the gateway does not keep in the principal: only `kept`
 * (`gateway.httpAuth.principalClaims`) reach the rules, so such a rule could never match (a deny
 * on it would let everyone through). `serve` checks at start and at every reload.
 */
export function refuseUnkeptPrincipalClaims(
  policy: InspectPolicy,
  kept: readonly string[],
  path: string,
): void {
  const missing = (policy.principalClaims ?? []).find(({ claim }) => !kept.includes(claim));
  if (missing === undefined) return;
  const claim = JSON.stringify(
    missing.claim.length > 80 ? `${missing.claim.slice(0, 80)}…` : missing.claim,
  );
  throw new PolicyFileError(
    `--policy ${shownPath(path)}: Invalid policy file: rules[${missing.index}].principal.claims names the claim ${claim}, which the gateway does not keep in the principal, so the rule could never match: add it to gateway.httpAuth.principalClaims (in force: ${kept.join(', ')}; a change to it applies when the gateway restarts)`,
    { details: { at: `rules[${missing.index}].principal.claims`, file: path } },
  );
}

/**
 * Refuses (`POLICY_FILE_INVALID`, naming the rule, the trusted issuers and the fix) a policy whose
 * allow or ask rule matches a `subject` or `claims` without an `issuer` while the gateway trusts
 * more than one issuer (`gateway.httpAuth.authorizationServers`): a subject or a group is only
 * meaningful at the issuer that signs it, so such a rule would let `sub: alice` (or a group of
 * that name) from any other trusted issuer through. Deny rules may leave the issuer out (they
 * only refuse more). `serve` checks at start and at every reload.
 */
export function refuseIssuerlessPrincipalRules(
  policy: InspectPolicy,
  issuers: readonly string[],
  path: string,
): void {
  if (issuers.length < 2) return;
  const rule = policy.issuerlessPrincipalRules?.[0];
  if (rule === undefined) return;
  const described = describeRule(rule);
  const names = rule.names.map((name) => `principal.${name}`).join(' and ');
  throw new PolicyFileError(
    `--policy ${shownPath(path)}: Invalid policy file: ${described}, decision ${rule.decision}, matches ${names} without principal.issuer, and this gateway trusts ${issuers.length} issuers (${issuers.join(', ')}): the same subject or claim value signed by any of them would match. Add "issuer" to the rule's principal (the issuer that names this subject or group, or a list); a deny rule may leave it out`,
    { details: { at: `rules[${rule.index}].principal`, file: path } },
  );
}

/**
 * Reads and parses a policy file of at most {@link MAX_POLICY_FILE_BYTES} (`--policy` of
 * `inspect`, `serve` and `wrap`). A file that cannot be read or used is a {@link PolicyFileError}
 * (`POLICY_FILE_INVALID`) whose message starts with `--policy <path>: ` and whose
 * `details.file` is the path.
 */
export async function loadInspectPolicy(
  path: string,
  maxBytes: number = MAX_POLICY_FILE_BYTES,
): Promise<InspectPolicy> {
  try {
    return await readPolicyFile(path, maxBytes);
  } catch (error) {
    if (!PolicyFileError.isInstance(error)) throw error;
    throw new PolicyFileError(`--policy ${shownPath(path)}: ${error.message}`, {
      cause: error.cause,
      details: { ...error.details, file: path },
    });
  }
}

async function readPolicyFile(path: string, maxBytes: number): Promise<InspectPolicy> {
  let text: string;
  try {
    const handle = await open(path, 'r');
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw invalid('--policy must name a regular file');
      if (stat.size > maxBytes) throw invalid(`the file is larger than ${maxBytes} bytes`);
      const buffer = Buffer.alloc(maxBytes + 1);
      const { bytesRead } = await handle.read(buffer, 0, maxBytes + 1, 0);
      if (bytesRead > maxBytes) throw invalid(`the file is larger than ${maxBytes} bytes`);
      text = buffer.subarray(0, bytesRead).toString('utf8');
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof PolicyFileError) throw error;
    const code = (error as { code?: unknown }).code;
    throw new PolicyFileError(
      `Cannot read the policy file${typeof code === 'string' && /^E[A-Z]+$/.test(code) ? ` (${code})` : ''}`,
      { cause: error },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid('the file is not valid JSON', undefined, error);
  }
  return parseInspectPolicy(parsed);
}
