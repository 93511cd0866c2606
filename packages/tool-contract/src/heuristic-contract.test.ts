import { describe, expect, it } from 'vitest';
import {
  HEURISTIC_DEFAULT_CONTENT_TRUST,
  HEURISTIC_DEFAULT_RISK,
  HEURISTIC_RISK_RULES,
  HEURISTIC_TRUST_RULES,
  heuristicContract,
} from './heuristic-contract.js';

describe('heuristicContract risk', () => {
  it.each([
    ['delete_file', undefined, 'destructive'],
    ['removeUser', undefined, 'destructive'],
    ['db.dropTable', undefined, 'destructive'],
    ['purge-cache', undefined, 'destructive'],
    ['pay_invoice', undefined, 'paid-operation'],
    ['purchaseDomain', undefined, 'paid-operation'],
    ['send_email', undefined, 'external-publication'],
    ['publishPost', undefined, 'external-publication'],
    ['run_command', undefined, 'high-risk-write'],
    ['exec', undefined, 'high-risk-write'],
    ['move_file', undefined, 'high-risk-write'],
    ['create_issue', undefined, 'low-risk-write'],
    ['update-record', undefined, 'low-risk-write'],
    ['write_file', undefined, 'low-risk-write'],
    ['read_text_file', undefined, 'read-only'],
    ['list_directory', undefined, 'read-only'],
    ['getOrderStatus', undefined, 'read-only'],
    ['search_files', undefined, 'read-only'],
    ['github__list_issues', undefined, 'read-only'],
  ] as const)('classifies %s as %s', (name, description, risk) => {
    expect(heuristicContract(name, description).risk).toBe(risk);
  });

  it.each([
    ['list_commits', 'read-only'],
    ['get_tags', 'read-only'],
    ['list_saved_searches', 'read-only'],
    ['getUpdates', 'read-only'],
    ['get_or_update_tag', 'low-risk-write'],
    ['list_then_commit', 'low-risk-write'],
    ['list_and_delete_tags', 'destructive'],
    ['commit_changes', 'low-risk-write'],
    ['tag_release', 'low-risk-write'],
    ['update_commit', 'low-risk-write'],
  ] as const)(
    'reads a write noun after a leading read word as the object: %s is %s',
    (name, risk) => {
      expect(heuristicContract(name).risk).toBe(risk);
    },
  );

  it.each([
    ['open_nodes', 'read-only'],
    ['open_file', 'read-only'],
    ['openPage', 'read-only'],
    ['open', 'high-risk-write'],
    ['open_pull_request', 'high-risk-write'],
    ['open_position', 'high-risk-write'],
    ['nodes_open', 'high-risk-write'],
    ['open_file_and_delete', 'destructive'],
    ['mcp__memory__open_nodes', 'read-only'],
    ['server-memory__open_nodes', 'read-only'],
    ['gh__list_commits', 'read-only'],
    ['delete__open_nodes', 'destructive'],
  ] as const)('reads open before a readable object: %s is %s', (name, risk) => {
    expect(heuristicContract(name).risk).toBe(risk);
  });

  // Tool names of the reference servers (@modelcontextprotocol/server-memory and
  // server-filesystem 2026.8.31, server-github 2025.4.8), with the risk their own read-only and
  // destructive hints (or, for github, which has none, their documentation) give.
  it.each([
    ['create_entities', 'low-risk-write'],
    ['create_relations', 'low-risk-write'],
    ['add_observations', 'low-risk-write'],
    ['delete_entities', 'destructive'],
    ['delete_observations', 'destructive'],
    ['delete_relations', 'destructive'],
    ['read_graph', 'read-only'],
    ['search_nodes', 'read-only'],
    ['open_nodes', 'read-only'],
    ['read_text_file', 'read-only'],
    ['read_media_file', 'read-only'],
    ['read_multiple_files', 'read-only'],
    ['list_directory_with_sizes', 'read-only'],
    ['directory_tree', 'read-only'],
    ['get_file_info', 'read-only'],
    ['list_allowed_directories', 'read-only'],
    ['create_directory', 'low-risk-write'],
    ['list_commits', 'read-only'],
    ['get_pull_request_files', 'read-only'],
    ['list_pull_requests', 'read-only'],
    ['search_repositories', 'read-only'],
    ['create_pull_request_review', 'low-risk-write'],
    ['merge_pull_request', 'high-risk-write'],
    ['push_files', 'high-risk-write'],
  ] as const)('classifies the reference server tool %s as %s', (name, risk) => {
    expect(heuristicContract(name).risk).toBe(risk);
  });

  // Tool names of the reference git server (mcp-server-git 2026.x): what each does to the
  // repository. `git_branch` lists branches there, but `branch` alone also names creating one,
  // so it keeps the cautious default.
  it.each([
    ['git_status', 'read-only'],
    ['git_diff_unstaged', 'read-only'],
    ['git_diff_staged', 'read-only'],
    ['git_diff', 'read-only'],
    ['git_show', 'read-only'],
    ['git_log', 'read-only'],
    ['git__git_log', 'read-only'],
    ['git_commit', 'low-risk-write'],
    ['git_add', 'low-risk-write'],
    ['git_create_branch', 'low-risk-write'],
    ['git_init', 'low-risk-write'],
    ['git_checkout', 'high-risk-write'],
    ['git_branch', 'high-risk-write'],
    ['git_reset', 'destructive'],
    ['git_log_and_delete', 'destructive'],
    ['log_event', 'high-risk-write'],
    ['write_log', 'low-risk-write'],
    ['checkout_cart', 'paid-operation'],
    ['create_checkout_session', 'paid-operation'],
  ] as const)('classifies the git server tool %s (and its look-alikes) as %s', (name, risk) => {
    expect(heuristicContract(name).risk).toBe(risk);
  });

  it('lets the riskiest name word win', () => {
    expect(heuristicContract('get_and_delete').risk).toBe('destructive');
    expect(heuristicContract('list_then_pay').risk).toBe('paid-operation');
  });

  it('lets the description raise but never lower the level', () => {
    expect(heuristicContract('write_file', 'Completely overwrite an existing file.').risk).toBe(
      'destructive',
    );
    expect(heuristicContract('delete_file', 'Reads nothing, lists nothing.').risk).toBe(
      'destructive',
    );
  });

  it('never concludes read-only from a description alone', () => {
    expect(heuristicContract('frobnicate', 'Get, list and read things.').risk).toBe(
      HEURISTIC_DEFAULT_RISK,
    );
  });

  it('defaults an unknown tool to a cautious level, not read-only', () => {
    expect(HEURISTIC_DEFAULT_RISK).toBe('high-risk-write');
    expect(heuristicContract('frobnicate').risk).toBe('high-risk-write');
    expect(heuristicContract('').risk).toBe('high-risk-write');
  });

  it('stems plural, past and -ing forms', () => {
    expect(heuristicContract('x', 'Deletes the row.').risk).toBe('destructive');
    expect(heuristicContract('x', 'The row is deleted.').risk).toBe('destructive');
    expect(heuristicContract('deleting_rows').risk).toBe('destructive');
    expect(heuristicContract('runs').risk).toBe('high-risk-write');
  });

  it('applies every name word of the documented table', () => {
    for (const rule of HEURISTIC_RISK_RULES) {
      for (const word of rule.nameWords) {
        expect(heuristicContract(`${word}_thing`).risk, word).toBe(rule.risk);
      }
      for (const word of rule.descriptionWords) {
        expect(heuristicContract('thing', `It will ${word} it.`).risk, word).toBe(rule.risk);
      }
    }
  });

  it('keeps each word in one row only', () => {
    const all = HEURISTIC_RISK_RULES.flatMap((rule) => rule.nameWords);
    expect(new Set(all).size).toBe(all.length);
  });

  it('reads a bounded prefix of a huge description', () => {
    const contract = heuristicContract('get_x', `${'a '.repeat(10_000)} delete`);
    expect(contract.risk).toBe('read-only');
  });

  it('rejects a name that is not a string', () => {
    expect(() => heuristicContract(42 as unknown as string)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_INPUT' }),
    );
  });
});

describe('heuristicContract content trust and other facts', () => {
  it.each([
    ['fetch_url', undefined, 'prompt-injection-prone'],
    ['read_inbox', undefined, 'prompt-injection-prone'],
    ['get_page', 'Returns the HTML of a web page.', 'prompt-injection-prone'],
    ['get_secret', undefined, 'sensitive'],
    ['printEnv', undefined, 'sensitive'],
    ['add_numbers', undefined, 'untrusted'],
  ] as const)('gives %s the content trust %s', (name, description, contentTrust) => {
    expect(heuristicContract(name, description).contentTrust).toBe(contentTrust);
  });

  it('never guesses trusted', () => {
    expect(HEURISTIC_DEFAULT_CONTENT_TRUST).toBe('untrusted');
    for (const rule of HEURISTIC_TRUST_RULES) expect(rule.contentTrust).not.toBe('trusted');
  });

  it('lets the most cautious trust word win', () => {
    expect(heuristicContract('fetch_secret').contentTrust).toBe('prompt-injection-prone');
  });

  it('applies every word of the documented trust table', () => {
    for (const rule of HEURISTIC_TRUST_RULES) {
      for (const word of rule.nameWords) {
        const got = heuristicContract(`x_${word}`).contentTrust;
        expect(got === rule.contentTrust || got === 'prompt-injection-prone', word).toBe(true);
      }
    }
  });

  it('marks only read-only guesses idempotent and carries version 0.0.0', () => {
    expect(heuristicContract('get_x')).toEqual({
      risk: 'read-only',
      contentTrust: 'untrusted',
      idempotent: true,
      version: '0.0.0',
      aliases: [],
    });
    expect(heuristicContract('create_x').idempotent).toBe(false);
    expect(Object.isFrozen(heuristicContract('x'))).toBe(true);
  });

  it('freezes its tables', () => {
    expect(Object.isFrozen(HEURISTIC_RISK_RULES)).toBe(true);
    expect(Object.isFrozen(HEURISTIC_RISK_RULES[0]?.nameWords)).toBe(true);
  });
});
