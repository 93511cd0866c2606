import { ContractDefinitionError } from './contract-definition-error.js';
import type { ContentTrustLevel, RiskLevel, ToolContract } from './taxonomy.js';

/** One row of the name/description keyword table {@link heuristicContract} applies. */
export interface HeuristicRiskRule {
  /** The risk level the tool gets when this is the first row with a matching word. */
  readonly risk: RiskLevel;
  /** Words that set this level when they appear in the tool's name. */
  readonly nameWords: readonly string[];
  /** Words that set this level when they appear in the description (descriptions only raise). */
  readonly descriptionWords: readonly string[];
}

/** One row of the content-trust keyword table {@link heuristicContract} applies. */
export interface HeuristicTrustRule {
  /** The content-trust level the tool gets when this is the first row with a matching word. */
  readonly contentTrust: ContentTrustLevel;
  /** Words that set this level when they appear in the tool's name. */
  readonly nameWords: readonly string[];
  /** Words that set this level when they appear in the tool's description. */
  readonly descriptionWords: readonly string[];
}

function deepFreeze<T extends { readonly nameWords: readonly string[] }>(rules: T[]): readonly T[] {
  for (const rule of rules) {
    Object.freeze(rule.nameWords);
    Object.freeze((rule as { readonly descriptionWords?: readonly string[] }).descriptionWords);
    Object.freeze(rule);
  }
  return Object.freeze(rules);
}

/**
 * The risk keyword table, riskiest level first. Mostly verbs: nouns such as `order` or `email`
 * name what a tool acts on, not what it does (`get_order` reads). Read-only words never come from
 * a description.
 */
export const HEURISTIC_RISK_RULES: readonly HeuristicRiskRule[] = deepFreeze([
  {
    risk: 'destructive',
    nameWords: [
      'delete',
      'del',
      'remove',
      'rm',
      'rmdir',
      'unlink',
      'drop',
      'destroy',
      'purge',
      'wipe',
      'erase',
      'truncate',
      'overwrite',
      'kill',
      'terminate',
      'uninstall',
      'revoke',
      'reset',
      'shred',
    ],
    descriptionWords: [
      'delete',
      'remove',
      'destroy',
      'purge',
      'wipe',
      'erase',
      'truncate',
      'overwrite',
      'permanently',
      'irreversible',
      'irreversibly',
    ],
  },
  {
    risk: 'paid-operation',
    nameWords: [
      'pay',
      'purchase',
      'buy',
      'charge',
      'checkout',
      'refund',
      'subscribe',
      'transfer',
      'withdraw',
      'donate',
      'bill',
    ],
    descriptionWords: ['pay', 'purchase', 'buy', 'payment', 'billing', 'billed', 'refund'],
  },
  {
    risk: 'external-publication',
    nameWords: [
      'send',
      'post',
      'publish',
      'tweet',
      'toot',
      'notify',
      'broadcast',
      'share',
      'reply',
      'forward',
      'invite',
      'submit',
      'announce',
    ],
    descriptionWords: ['publish', 'publicly', 'broadcast', 'tweet'],
  },
  {
    risk: 'high-risk-write',
    nameWords: [
      'exec',
      'execute',
      'run',
      'shell',
      'bash',
      'eval',
      'evaluate',
      'spawn',
      'deploy',
      'install',
      'migrate',
      'move',
      'mv',
      'rename',
      'push',
      'merge',
      'grant',
      'chmod',
      'chown',
      'sudo',
      'restart',
      'shutdown',
      'reboot',
      'approve',
    ],
    descriptionWords: ['execute', 'shell', 'arbitrary', 'deploy'],
  },
  {
    risk: 'low-risk-write',
    nameWords: [
      'create',
      'add',
      'write',
      'edit',
      'update',
      'set',
      'save',
      'insert',
      'upload',
      'append',
      'modify',
      'put',
      'patch',
      'upsert',
      'tag',
      'label',
      'mkdir',
      'make',
      'copy',
      'cp',
      'enable',
      'disable',
      'configure',
      'assign',
      'attach',
      'mark',
      'store',
      'register',
      'commit',
      'draft',
      'star',
      'init',
      'initialize',
    ],
    descriptionWords: ['write', 'modify', 'create', 'update', 'insert', 'append'],
  },
  {
    risk: 'read-only',
    nameWords: [
      'get',
      'list',
      'read',
      'search',
      'find',
      'fetch',
      'query',
      'show',
      'describe',
      'view',
      'lookup',
      'look',
      'count',
      'stat',
      'stats',
      'info',
      'status',
      'browse',
      'check',
      'inspect',
      'head',
      'tail',
      'cat',
      'ls',
      'grep',
      'diff',
      'explain',
      'preview',
      'retrieve',
      'validate',
      'tree',
      'metadata',
      'schema',
      'version',
      'help',
      'ping',
      'health',
    ],
    descriptionWords: [],
  },
]);

/** The content-trust keyword table, most cautious level first. */
export const HEURISTIC_TRUST_RULES: readonly HeuristicTrustRule[] = deepFreeze([
  {
    contentTrust: 'prompt-injection-prone',
    nameWords: [
      'fetch',
      'browse',
      'scrape',
      'crawl',
      'web',
      'url',
      'http',
      'html',
      'webpage',
      'website',
      'email',
      'mail',
      'inbox',
      'message',
      'comment',
      'issue',
      'ticket',
      'chat',
      'slack',
      'discord',
      'tweet',
      'rss',
      'feed',
    ],
    descriptionWords: ['url', 'web', 'website', 'webpage', 'internet', 'html', 'email', 'inbox'],
  },
  {
    contentTrust: 'sensitive',
    nameWords: [
      'secret',
      'password',
      'passwd',
      'credential',
      'token',
      'apikey',
      'vault',
      'env',
      'pii',
      'ssn',
      'cookie',
    ],
    descriptionWords: ['secret', 'password', 'credential', 'credentials'],
  },
]);

/** Risk of a tool no keyword classifies: cautious (approval under a typical policy), not read-only. */
export const HEURISTIC_DEFAULT_RISK: RiskLevel = 'high-risk-write';
/** Content trust of a tool no keyword classifies: never `trusted` for a guess. */
export const HEURISTIC_DEFAULT_CONTENT_TRUST: ContentTrustLevel = 'untrusted';
/** Version a heuristic contract carries, so it is never mistaken for a declared one. */
export const HEURISTIC_VERSION = '0.0.0';

/** Longest name or description the heuristic reads; the rest is ignored (bounded work). */
const MAX_TEXT_LENGTH = 4096;

/** Each word of a name or description with its light stems, in order. */
function wordList(text: string): string[][] {
  const split = text
    .slice(0, MAX_TEXT_LENGTH)
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/);
  const result: string[][] = [];
  for (const word of split) {
    if (word === '') continue;
    const variants = [word];
    // Light stemming: deletes/deleted/deleting -> delete, runs -> run, pushes -> push.
    if (word.endsWith('s') && word.length > 3) variants.push(word.slice(0, -1));
    if (word.endsWith('es') && word.length > 4) variants.push(word.slice(0, -2));
    if (word.endsWith('d') && word.length > 3) variants.push(word.slice(0, -1));
    if (word.endsWith('ed') && word.length > 4) variants.push(word.slice(0, -2));
    if (word.endsWith('ing') && word.length > 5) {
      variants.push(word.slice(0, -3));
      variants.push(`${word.slice(0, -3)}e`);
    }
    result.push(variants);
  }
  return result;
}

/** Lower-case words of a name or description: split on non-letters and camelCase humps. */
function words(text: string): Set<string> {
  return new Set(wordList(text).flat());
}

/**
 * Write words that are also nouns. In a name that starts with a read-only word and joins no second
 * verb (`and`, `or`, `then`), they name what is read, not what is done (`list_commits`,
 * `get_tags`, `list_saved_searches`), so they do not count. Riskier words always count.
 */
export const HEURISTIC_READ_OBJECT_WORDS: readonly string[] = Object.freeze([
  'commit',
  'tag',
  'label',
  'draft',
  'star',
  'mark',
  'store',
  'patch',
  'update',
  'upload',
  'edit',
  'copy',
  'set',
  'save',
  'register',
]);

/**
 * What `open` reads when it is the first word of a name and the next word is one of these
 * (`open_nodes` of the reference memory server, `open_file`): the name counts as having a
 * read-only word. `open` alone, or before anything else (`open_pull_request`, `open_position`),
 * stays unclassified.
 */
export const HEURISTIC_OPEN_READ_OBJECTS: readonly string[] = Object.freeze([
  'node',
  'file',
  'document',
  'doc',
  'page',
  'tab',
  'note',
  'entity',
  'entities',
  'record',
  'resource',
  'graph',
]);

/**
 * Git's read verbs, which read only in a name that also has the word `git` (`git_log` of the
 * reference git server reads; `log_event` elsewhere writes a log line, so it stays unclassified).
 * In such a name `checkout` is git's, not a payment: it does not count as `paid-operation`, so
 * `git_checkout` gets the cautious default (it rewrites the working tree).
 */
export const HEURISTIC_GIT_READ_WORDS: readonly string[] = Object.freeze([
  'log',
  'reflog',
  'shortlog',
  'blame',
]);

const CONJUNCTIONS: ReadonlySet<string> = new Set(['and', 'or', 'then']);
const GIT_READS: ReadonlySet<string> = new Set(HEURISTIC_GIT_READ_WORDS);
const READ_OBJECTS: ReadonlySet<string> = new Set(HEURISTIC_READ_OBJECT_WORDS);
const OPEN_OBJECTS: ReadonlySet<string> = new Set(HEURISTIC_OPEN_READ_OBJECTS);

/** The name's words as the risk rules match them (see the two tables above). */
function riskNameWords(name: string, readWords: ReadonlySet<string>): Set<string> {
  // Position counts within the tool's own name: after the last `__` of a namespaced name
  // (`mcp__memory__open_nodes`, a bridge's `memory__open_nodes`); the namespace still counts.
  const cut = name.lastIndexOf('__');
  const namespace = cut === -1 ? [] : wordList(name.slice(0, cut));
  const list = wordList(cut === -1 ? name : name.slice(cut + 2));
  const first = list[0];
  const result = new Set<string>(namespace.flat());
  const leadingRead =
    first?.some((variant) => readWords.has(variant)) === true &&
    !list.some((variants) => CONJUNCTIONS.has(variants[0] as string));
  list.forEach((variants, index) => {
    if (index > 0 && leadingRead && variants.some((variant) => READ_OBJECTS.has(variant))) return;
    for (const variant of variants) result.add(variant);
  });
  const second = list[1];
  if (
    first?.[0] === 'open' &&
    second !== undefined &&
    second.some((variant) => OPEN_OBJECTS.has(variant))
  ) {
    result.add('read');
  }
  if (result.has('git')) {
    result.delete('checkout');
    for (const word of GIT_READS) {
      if (result.has(word)) {
        result.add('read');
        break;
      }
    }
  }
  return result;
}

/** The tables as sets, built once (the exported tables stay plain frozen arrays). */
const RISK_SETS = HEURISTIC_RISK_RULES.map((rule) => ({
  risk: rule.risk,
  name: new Set(rule.nameWords),
  description: new Set(rule.descriptionWords),
}));
const TRUST_SETS = HEURISTIC_TRUST_RULES.map((rule) => ({
  contentTrust: rule.contentTrust,
  name: new Set(rule.nameWords),
  description: new Set(rule.descriptionWords),
}));

const READ_WORDS: ReadonlySet<string> = new Set(
  HEURISTIC_RISK_RULES.find((rule) => rule.risk === 'read-only')?.nameWords ?? [],
);

function matches(found: Set<string>, table: ReadonlySet<string>): boolean {
  for (const word of found) if (table.has(word)) return true;
  return false;
}

/**
 * The documented fallback for a tool that declares no contract, guessed from its name and
 * description with the keyword tables {@link HEURISTIC_RISK_RULES} and
 * {@link HEURISTIC_TRUST_RULES}:
 *
 * - the riskiest level whose name words appear in the name wins; description words can only
 *   raise it; `read-only` needs a read word in the name and no riskier word anywhere;
 * - a tool no word classifies gets {@link HEURISTIC_DEFAULT_RISK} (`high-risk-write`);
 * - content trust is the most cautious level whose words appear, else `untrusted` (never
 *   `trusted`); `idempotent` is true only for `read-only`; version is `0.0.0`.
 *
 * Names are treated as words split at `_`, `-`, `.`, spaces and camelCase humps, lower-cased,
 * with light stemming (`deletes`, `deleted`, `deleting` all match `delete`). After a leading
 * read-only word, the write words of {@link HEURISTIC_READ_OBJECT_WORDS} name the object read
 * (`list_commits` reads); `open` before a word of {@link HEURISTIC_OPEN_READ_OBJECTS} reads
 * (`open_nodes`). "Leading" and "first" are counted after the last `__` of a namespaced name
 * (`mcp__memory__open_nodes`).
 */
export function heuristicContract(name: string, description?: string): ToolContract {
  if (typeof name !== 'string') {
    throw new ContractDefinitionError('heuristicContract needs the tool name as a string.', {
      code: 'CONTRACT_INVALID_INPUT',
    });
  }
  const nameWords = riskNameWords(name, READ_WORDS);
  const trustNameWords = words(name);
  const descriptionWords = words(typeof description === 'string' ? description : '');

  let risk: RiskLevel | undefined;
  for (const rule of RISK_SETS) {
    if (matches(nameWords, rule.name) || matches(descriptionWords, rule.description)) {
      risk = rule.risk;
      break;
    }
  }
  risk ??= HEURISTIC_DEFAULT_RISK;

  let contentTrust: ContentTrustLevel = HEURISTIC_DEFAULT_CONTENT_TRUST;
  for (const rule of TRUST_SETS) {
    if (matches(trustNameWords, rule.name) || matches(descriptionWords, rule.description)) {
      contentTrust = rule.contentTrust;
      break;
    }
  }

  return Object.freeze({
    risk,
    contentTrust,
    idempotent: risk === 'read-only',
    version: HEURISTIC_VERSION,
    aliases: Object.freeze([]) as readonly string[],
  });
}
