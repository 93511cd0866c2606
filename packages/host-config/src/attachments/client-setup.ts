import { posix, win32 } from 'node:path';
import { HOOK_SCRIPT_FILENAME } from './hook-script.js';

/** The clients the hook supports, in a stable order. */
export const HOOK_CLIENTS: readonly ['claude-code', 'codex', 'cursor', 'vscode'] = Object.freeze([
  'claude-code',
  'codex',
  'cursor',
  'vscode',
] as const) as readonly ['claude-code', 'codex', 'cursor', 'vscode'];

/** One supported client. */
export type HookClient = (typeof HOOK_CLIENTS)[number];

/** Where a hook is installed: for the user (all projects) or for one project. */
export type HookScope = 'user' | 'project';

/** The oldest client version that applies the hook's rewrite, and where that fact comes from. */
export interface ClientMinVersion {
  /** Minimum client version. */
  readonly version: string;
  /** Where the fact comes from (changelog, source, pull request). */
  readonly source: string;
  /** False when the version is inferred (for example from a merge date), not stated by the vendor. */
  readonly confirmed: boolean;
  /** Display name of the client. */
  readonly displayName: string;
}

/**
 * Minimum client versions as data, with their sources (see research notes in the repository:
 * `shared/research/hooks.md`, read 2026-08/2026-09).
 */
export const CLIENT_MIN_VERSIONS: Readonly<Record<HookClient, ClientMinVersion>> = Object.freeze({
  'claude-code': Object.freeze({
    displayName: 'Claude Code',
    version: '2.1.88',
    source:
      'Claude Code changelog 2.0.10 ("PreToolUse hooks can now modify tool inputs"); updatedInput without a permissionDecision (passthrough, keeps the permission prompt) is confirmed in the v2.1.88 source (toolExecution.ts, hookUpdatedInput). 2.1.90 or newer recommended (exit 2 + JSON fix).',
    confirmed: true,
  }),
  codex: Object.freeze({
    displayName: 'Codex CLI',
    version: '0.131.0',
    source:
      'openai/codex PR #20527 (PreToolUse updatedInput rewrites, merged 2026-05-12); 0.130.0 still rejects updatedInput (rtk-ai/icm#237). MCP tools reach hooks since 0.124.0 (PR #18385).',
    confirmed: false,
  }),
  cursor: Object.freeze({
    displayName: 'Cursor',
    version: '2.4',
    source:
      'Cursor changelog 2.4 (2026-01-22, "PreToolUse and PostToolUse hooks"); preToolUse documents updated_input at cursor.com/docs/hooks. The first version honouring updated_input for MCP tools is not published.',
    confirmed: false,
  }),
  vscode: Object.freeze({
    displayName: 'VS Code (GitHub Copilot agent)',
    version: '1.110',
    source:
      'Agent hooks (Preview) since 1.109.3 (release notes v1_109); schema-validated updatedInput from microsoft/vscode PR #293575 (2026-02-07), so 1.110 (inferred).',
    confirmed: false,
  }),
});

/** Where the home and project folders are, to build absolute paths. */
export interface HookSetupPaths {
  /** The user's home folder. Default `~` (a placeholder to replace). */
  readonly home?: string;
  /** The project folder. Default `<project>` (a placeholder to replace). */
  readonly projectDir?: string;
  /** Codex's home (`$CODEX_HOME`). Default `<home>/.codex`. */
  readonly codexHome?: string;
  /** Platform whose path and shell rules apply. Default `process.platform`. */
  readonly platform?: NodeJS.Platform;
  /**
   * The Node executable the registered command runs the script with. Default `node`, found on
   * the client's `PATH` when the hook runs (a placeholder for documentation); the installer
   * passes an absolute path, by default the Node that runs it (`process.execPath`).
   */
  readonly node?: string;
}

/** How a client's config file stores hooks. */
export interface HookConfigFormat {
  /** Key under `hooks` that lists pre-tool-use handlers. */
  readonly eventKey: 'PreToolUse' | 'preToolUse';
  /** True when the event lists matcher groups (`{ matcher, hooks: [handler] }`), false for handlers. */
  readonly grouped: boolean;
  /** Top-level keys the file must carry (Cursor's `version: 1`). */
  readonly topLevel: Readonly<Record<string, unknown>>;
}

/** Everything needed to set the hook up for one client at one scope. */
export interface HookSetup {
  /** The client (agent host) this setup is for. */
  readonly client: HookClient;
  /** Whether the hook is installed for the user (all projects) or for one project. */
  readonly scope: HookScope;
  /** Where the script file goes. */
  readonly scriptPath: string;
  /** The config file the registration is merged into. */
  readonly configPath: string;
  /** The shell command the client runs. */
  readonly command: string;
  /** The tool-name matcher, or null where the client ignores matchers (VS Code). */
  readonly matcher: string | null;
  /** The entry added to the event's list (a matcher group, or a handler). */
  readonly entry: Readonly<Record<string, unknown>>;
  /** The whole block to merge into the config file. */
  readonly registration: Readonly<Record<string, unknown>>;
  /** How this client's config file stores hooks, for merging and removing the registration. */
  readonly format: HookConfigFormat;
  /** The oldest client version that applies the hook's rewrite. */
  readonly minVersion: ClientMinVersion;
  /** Things the user must know or do (trust steps, reload, caveats). */
  readonly notes: readonly string[];
}

/** Timeout the registrations give the hook, in seconds (VS Code's default of 30 is too short). */
export const HOOK_TIMEOUT_SECONDS = 120;

const SAFE_WORD = /^[A-Za-z0-9_./:@%+=,-]+$/;

/** Quotes a path for the client's shell (sh on POSIX, cmd.exe or Git Bash on Windows). */
function quotePath(file: string, platform: NodeJS.Platform): string {
  if (file.startsWith('~/') && SAFE_WORD.test(file.slice(2))) return file;
  if (SAFE_WORD.test(file)) return file;
  if (platform === 'win32') return `"${file}"`;
  return `'${file.replace(/'/g, `'\\''`)}'`;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

/**
 * Builds the paths, command and registration block for one client and scope. With no `paths`
 * it returns placeholders (`~`, `<project>`) for documentation and the missing-hook payload.
 */
export function getHookSetup(
  client: HookClient,
  scope: HookScope,
  paths: HookSetupPaths = {},
): HookSetup {
  const platform = paths.platform ?? process.platform;
  const join = platform === 'win32' ? win32.join : posix.join;
  const home = paths.home ?? '~';
  const project = paths.projectDir ?? '<project>';
  const base = scope === 'user' ? home : project;
  let scriptPath: string;
  let configPath: string;
  let matcher: string | null;
  let format: HookConfigFormat;
  const notes: string[] = [];
  switch (client) {
    case 'claude-code':
      scriptPath = join(base, '.claude', 'hooks', HOOK_SCRIPT_FILENAME);
      configPath = join(
        base,
        '.claude',
        scope === 'user' ? 'settings.json' : 'settings.local.json',
      );
      matcher = 'mcp__.*';
      format = { eventKey: 'PreToolUse', grouped: true, topLevel: {} };
      notes.push(
        'The hook answers with updatedInput and no permissionDecision, so your normal permission prompt still applies.',
        'VS Code and Cursor also load Claude settings files; the hook answers them in their own form and is a fast no-op for calls without attachments.',
      );
      if (scope === 'project') {
        notes.push(
          'Project scope uses .claude/settings.local.json (not committed) because the command holds an absolute path.',
        );
      }
      break;
    case 'codex': {
      const codexHome = paths.codexHome ?? join(home, '.codex');
      const root = scope === 'user' ? codexHome : join(project, '.codex');
      scriptPath = join(root, 'hooks', HOOK_SCRIPT_FILENAME);
      configPath = join(root, 'hooks.json');
      matcher = 'mcp__.*';
      format = { eventKey: 'PreToolUse', grouped: true, topLevel: {} };
      notes.push(
        'Codex runs a hook only after you trust it, and skips an untrusted one silently (the server then gets file:// and answers with the install payload): open /hooks in Codex and trust this hook (again after any change to its command), or run install with --trust-codex-hook to write the trust entry to config.toml. `toolfence-host-config status --client codex` says whether it is trusted.',
        'The hook\'s "allow" does not approve the MCP call itself: with approval_policy = "never" the call fails unless the server\'s tools are approved, e.g. default_tools_approval_mode = "approve" under [mcp_servers.<name>] in config.toml (or approve the tool when Codex asks).',
        'Codex answers are permissionDecision "allow" plus updatedInput, the only rewrite form Codex accepts.',
        'Codex runs hooks through a login shell ($SHELL -lc); a shell profile that prints to stdout corrupts hook output.',
        'Hooks are on by default in Codex (no [features] flag needed); [features] hooks = false (or the deprecated codex_hooks = false) turns them off.',
      );
      if (scope === 'project') {
        notes.push('Project hooks load only when the project is trusted in Codex.');
      }
      break;
    }
    case 'cursor':
      scriptPath = join(base, '.cursor', 'hooks', HOOK_SCRIPT_FILENAME);
      configPath = join(base, '.cursor', 'hooks.json');
      matcher = 'MCP:.*';
      format = { eventKey: 'preToolUse', grouped: false, topLevel: { version: 1 } };
      notes.push(
        'Cursor rewrites only through preToolUse (beforeMCPExecution cannot change input).',
        'Cursor also loads Claude settings files by default; one registration is enough.',
      );
      if (scope === 'project') notes.push('Project hooks run only in trusted workspaces.');
      break;
    case 'vscode':
      scriptPath = join(
        base,
        scope === 'user' ? '.copilot' : '.github',
        'hooks',
        HOOK_SCRIPT_FILENAME,
      );
      configPath = join(
        base,
        scope === 'user' ? '.copilot' : '.github',
        'hooks',
        'toolfence_attachment_substitution.json',
      );
      matcher = null;
      format = { eventKey: 'PreToolUse', grouped: false, topLevel: {} };
      notes.push(
        'VS Code ignores matchers, so the hook runs for every agent tool call; it exits at once when there is no attachment.',
        'VS Code drops an updatedInput that fails the tool input schema; declare attachment sources as plain strings (no format: uri).',
        'VS Code also loads ~/.claude/settings.json; if the Claude Code hook is installed too, the hook simply runs twice with the same result.',
      );
      break;
  }
  const command = `${quotePath(paths.node ?? 'node', platform)} ${quotePath(scriptPath, platform)}`;
  const handler: Record<string, unknown> = {
    type: 'command',
    command,
    timeout: HOOK_TIMEOUT_SECONDS,
  };
  let entry: Record<string, unknown>;
  if (client === 'cursor') {
    entry = { command, matcher, timeout: HOOK_TIMEOUT_SECONDS };
  } else if (format.grouped) {
    // No statusMessage for Codex: the trust hash covers every handler field, and the fewer there
    // are, the surer `status` is to compute the same hash as Codex.
    entry = { matcher, hooks: [handler] };
  } else {
    entry = handler;
  }
  const registration = { ...format.topLevel, hooks: { [format.eventKey]: [entry] } };
  return deepFreeze({
    client,
    scope,
    scriptPath,
    configPath,
    command,
    matcher,
    entry,
    registration,
    format,
    minVersion: CLIENT_MIN_VERSIONS[client],
    notes,
  });
}
