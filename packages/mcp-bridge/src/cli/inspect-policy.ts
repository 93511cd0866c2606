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
} from '@toolfence/tools';
import { isRecord } from '../is-record.js';
import { InspectUsageError } from './inspect-usage-error.js';

/** Largest policy file `--policy` reads, in bytes. */
export const MAX_POLICY_FILE_BYTES: number = 1024 * 1024;

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
        readonly tool: string;
        readonly decision: string;
        readonly reason?: string;
      }[];
      readonly default: 'allow' | 'ask' | 'deny';
    };

/** A loaded policy: the authorizer that judges each tool, and what to print about it. */
export interface InspectPolicy {
  readonly authorizer: Authorizer;
  readonly summary: InspectPolicySummary;
}

function invalid(message: string, cause?: unknown): InspectUsageError {
  return new InspectUsageError(
    `Invalid policy file: ${message}`,
    cause === undefined ? {} : { cause },
  );
}

function onlyKeys(record: Record<string, unknown>, allowed: readonly string[], at: string): void {
  for (const key of Object.keys(record)) {
    if (!allowed.includes(key)) {
      const shown = /^[\w$.-]{1,40}$/.test(key) ? ` "${key}"` : '';
      throw invalid(`${at} has an unknown key${shown} (allowed: ${allowed.join(', ')})`);
    }
  }
}

function configurationMessage(error: unknown): string {
  return error instanceof Error ? error.message : 'rejected';
}

/** RiskPolicy with its defaults: the policy used when `--policy` is not given. */
export function defaultInspectPolicy(): InspectPolicy {
  return {
    authorizer: new RiskPolicy(),
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
 * `RiskPolicy`, `{ "kind": "rules", ... }` for a `RuleBasedPolicy`. Throws {@link InspectUsageError}.
 */
export function parseInspectPolicy(value: unknown): InspectPolicy {
  if (!isRecord(value)) throw invalid('the top level must be a JSON object');
  if (value.kind === 'risk') {
    onlyKeys(value, ['$comment', 'kind', 'risk', 'contentTrust', 'undeclared'], 'the policy');
    for (const key of ['risk', 'contentTrust'] as const) {
      if (value[key] === undefined) continue;
      if (!isRecord(value[key])) throw invalid(`${key} must be an object`);
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
      throw invalid(configurationMessage(error), error);
    }
    return {
      authorizer,
      summary: { kind: 'risk', source: 'file', risk, contentTrust, undeclared },
    };
  }
  if (value.kind === 'rules') {
    onlyKeys(value, ['$comment', 'kind', 'rules', 'default'], 'the policy');
    if (!Array.isArray(value.rules)) throw invalid('rules must be an array');
    const rules: PolicyRule[] = [];
    for (const [index, rule] of value.rules.entries()) {
      if (!isRecord(rule)) throw invalid(`rules[${index}] must be an object`);
      onlyKeys(rule, ['$comment', 'tool', 'decision', 'reason'], `rules[${index}]`);
      rules.push(rule as unknown as PolicyRule);
    }
    const fallback = (value.default ?? 'deny') as 'allow' | 'ask' | 'deny';
    let authorizer: RuleBasedPolicy;
    try {
      authorizer = new RuleBasedPolicy(rules, { default: fallback });
    } catch (error) {
      throw invalid(configurationMessage(error), error);
    }
    return {
      authorizer,
      summary: {
        kind: 'rules',
        source: 'file',
        rules: rules.map((rule) => ({
          tool: rule.tool,
          decision: rule.decision,
          ...(rule.reason === undefined ? {} : { reason: rule.reason }),
        })),
        default: fallback,
      },
    };
  }
  throw invalid('"kind" must be "risk" or "rules"');
}

/** Reads and parses a policy file of at most {@link MAX_POLICY_FILE_BYTES}. */
export async function loadInspectPolicy(
  path: string,
  maxBytes: number = MAX_POLICY_FILE_BYTES,
): Promise<InspectPolicy> {
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
    if (error instanceof InspectUsageError) throw error;
    const code = (error as { code?: unknown }).code;
    throw new InspectUsageError(
      `Cannot read the policy file${typeof code === 'string' && /^E[A-Z]+$/.test(code) ? ` (${code})` : ''}`,
      { cause: error },
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw invalid('the file is not valid JSON', error);
  }
  return parseInspectPolicy(parsed);
}
