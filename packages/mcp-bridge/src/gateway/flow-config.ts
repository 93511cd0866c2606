// The `flow` section of the gateway's policy file (`serve --policy FILE`): the flow guard that
// `toolfence-mcp serve` keeps per downstream session (see flow-session.ts). Checked here, with
// every unknown key refused (with a did-you-mean), so a typo cannot silently loosen the guard.
import {
  checkOptionKeys,
  type FlowGuardOptions,
  type FlowPermit,
  type FlowToolSelector,
} from '@toolfence/tools/core';
import { isRecord } from '../is-record.js';
import { PolicyFileError } from './policy-file-error.js';

/**
 * Names tools as a policy rule does: a string is a tool's own name on any server (`publish`) or,
 * with `__`, an offered name (`publisher__publish`); `{ "server": "publisher" }` is every tool of
 * that config server, `{ "server": "publisher", "tool": "publish" }` one of them. The flow
 * guard's own selector (`FlowToolSelector` of `@toolfence/tools`).
 */
export type GatewayFlowSelector = FlowToolSelector;

/** One flow the user permits: data from a source to a sink (`FlowPermit` of `@toolfence/tools`). */
export type GatewayFlowPermit = FlowPermit;

/**
 * The gateway's flow guard settings: the policy file's `flow` section. They are the options of
 * `FlowGuard` (`FlowGuardOptions` of `@toolfence/tools`: `mode`, `sinks`, `notSinks`,
 * `untrusted`, `sensitive`, `trusted`, `permit`, `maxSessions`, `maxSourcesPerSession`), and
 * `enabled` (run the flow guard; default true). The gateway's observe mode (`--observe`,
 * `gateway.observe`) makes `mode` `observe` too. Not `overrides`: the gateway's policy file
 * corrects a tool's labels with `sinks`, `notSinks`, `untrusted`, `sensitive` and `trusted`, and
 * has no contract overrides for its policy either, so there is nothing for the guard to share.
 */
export type GatewayFlowSettings = Omit<FlowGuardOptions, 'overrides'> & {
  /** Run the flow guard. Default true. */
  readonly enabled?: boolean;
};

/**
 * Every setting of {@link GatewayFlowSettings}, checked by the compiler: an option `FlowGuard`
 * gains (or loses) fails the build here until the policy file reads it.
 */
const FLOW_SETTING_KEYS = {
  enabled: true,
  mode: true,
  sinks: true,
  notSinks: true,
  untrusted: true,
  sensitive: true,
  trusted: true,
  permit: true,
  maxSessions: true,
  maxSourcesPerSession: true,
} as const satisfies Record<keyof GatewayFlowSettings, true>;

/** The keys of the policy file's `flow` section. */
export const FLOW_POLICY_KEYS: readonly string[] = Object.freeze([
  '$comment',
  ...Object.keys(FLOW_SETTING_KEYS),
]);

/** The keys of one `flow.permit` entry. */
export const FLOW_PERMIT_KEYS: readonly string[] = Object.freeze(['$comment', 'from', 'to']);

/** The keys of a selector object. */
const SELECTOR_KEYS: readonly string[] = Object.freeze(['server', 'tool']);

/** Longest tool selector accepted, in characters. */
const MAX_SELECTOR_CHARS = 200;

/** Most selectors in one list (and permits), so a file cannot make each call scan without end. */
const MAX_SELECTORS = 1_000;

function invalid(message: string, at: string): PolicyFileError {
  return new PolicyFileError(`Invalid policy file: ${at} ${message}`, { details: { at } });
}

function keysOf(value: Record<string, unknown>, accepted: readonly string[], at: string): void {
  checkOptionKeys(value, accepted, at, (message) => {
    // The key is named (JSON-quoted) with the accepted ones and, when one is close, a suggestion.
    return new PolicyFileError(`Invalid policy file: ${message}`, { details: { at } });
  });
}

const SELECTOR_FORMS =
  'a tool selector: "tool" (its own name), "server__tool" (the offered name) or {"server": "name"} with an optional "tool"';

function selectorText(value: unknown, at: string): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_SELECTOR_CHARS) {
    throw invalid(`must be ${SELECTOR_FORMS}, each name 1-${MAX_SELECTOR_CHARS} characters`, at);
  }
  return value;
}

function selector(value: unknown, at: string): GatewayFlowSelector {
  if (!isRecord(value)) return selectorText(value, at);
  keysOf(value, SELECTOR_KEYS, at);
  if (value.server === undefined && value.tool === undefined) {
    throw invalid(`must be ${SELECTOR_FORMS}: give "server", "tool" or both`, at);
  }
  return Object.freeze({
    ...optional(
      'server',
      value.server === undefined ? undefined : selectorText(value.server, `${at}.server`),
    ),
    ...optional(
      'tool',
      value.tool === undefined ? undefined : selectorText(value.tool, `${at}.tool`),
    ),
  });
}

function selectors(value: unknown, at: string): readonly GatewayFlowSelector[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) throw invalid('must be an array of tool selectors', at);
  if (value.length > MAX_SELECTORS) throw invalid(`holds more than ${MAX_SELECTORS} entries`, at);
  return Object.freeze(value.map((item, index) => selector(item, `${at}[${index}]`)));
}

function permits(value: unknown): readonly GatewayFlowPermit[] | undefined {
  if (value === undefined) return undefined;
  const at = 'flow.permit';
  if (!Array.isArray(value)) {
    throw invalid('must be an array of {"from": SOURCE, "to": SINK} objects', at);
  }
  if (value.length > MAX_SELECTORS) throw invalid(`holds more than ${MAX_SELECTORS} entries`, at);
  return Object.freeze(
    value.map((entry, index) => {
      const where = `${at}[${index}]`;
      if (!isRecord(entry)) throw invalid('must be an object {"from": SOURCE, "to": SINK}', where);
      keysOf(entry, FLOW_PERMIT_KEYS, where);
      return Object.freeze({
        from: selector(entry.from, `${where}.from`),
        to: selector(entry.to, `${where}.to`),
      });
    }),
  );
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/**
 * Checks the policy file's `flow` section (see the README's "Flow guard" section). Throws
 * {@link PolicyFileError} naming the key (`flow.permit[0].to`) and what is accepted.
 */
export function parseFlowPolicy(value: unknown): GatewayFlowSettings {
  if (!isRecord(value)) throw invalid('must be an object', 'flow');
  keysOf(value, FLOW_POLICY_KEYS, 'flow');
  if (value.enabled !== undefined && typeof value.enabled !== 'boolean') {
    throw invalid('must be true or false', 'flow.enabled');
  }
  if (value.mode !== undefined && value.mode !== 'enforce' && value.mode !== 'observe') {
    throw invalid('must be "enforce" or "observe"', 'flow.mode');
  }
  for (const key of ['maxSessions', 'maxSourcesPerSession'] as const) {
    const max = value[key];
    if (
      max !== undefined &&
      (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1 || max > 10_000_000)
    ) {
      throw invalid('must be a whole number from 1 to 10000000', `flow.${key}`);
    }
  }
  return Object.freeze({
    ...optional('enabled', value.enabled as boolean | undefined),
    ...optional('mode', value.mode as 'enforce' | 'observe' | undefined),
    ...optional('sinks', selectors(value.sinks, 'flow.sinks')),
    ...optional('notSinks', selectors(value.notSinks, 'flow.notSinks')),
    ...optional('untrusted', selectors(value.untrusted, 'flow.untrusted')),
    ...optional('sensitive', selectors(value.sensitive, 'flow.sensitive')),
    ...optional('trusted', selectors(value.trusted, 'flow.trusted')),
    ...optional('permit', permits(value.permit)),
    ...optional('maxSessions', value.maxSessions as number | undefined),
    ...optional('maxSourcesPerSession', value.maxSourcesPerSession as number | undefined),
  });
}
