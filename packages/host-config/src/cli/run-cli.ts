import { basename, dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import {
  CLIENT_MIN_VERSIONS,
  getHookSetup,
  HOOK_CLIENTS,
  type HookClient,
  type HookScope,
} from '../attachments/client-setup.js';
import {
  HOOK_SCRIPT,
  HOOK_SCRIPT_FILENAME,
  LEGACY_HOOK_SCRIPT_FILENAMES,
} from '../attachments/hook-script.js';
import { HostConfigError } from '../host-config-error.js';
import { VERSION } from '../version.js';
import { InstallUsageError } from './errors.js';
import {
  getHookStatus,
  type HookInstallResult,
  type HookStatus,
  installHook,
  uninstallHook,
} from './installer.js';

/** Where the CLI writes: two line sinks, so tests and embedders can capture output. */
export interface CliWriter {
  /** Normal output (stdout). */
  readonly out: (text: string) => void;
  /** Diagnostics (stderr). */
  readonly err: (text: string) => void;
}

/** Environment the CLI reads (paths only). */
export interface CliEnvironment {
  /** The user's home folder, used unless `--home` is given. Default: the installer's (`os.homedir()`). */
  readonly home?: string;
  /** The project folder for `--scope project`, used unless `--project` is given. Default `process.cwd()`. */
  readonly cwd?: string;
  /** Codex's home. Default: the installer's (`$CODEX_HOME`, else `<home>/.codex`). */
  readonly codexHome?: string;
}

/** The one line printed on a usage error (the whole text is `help`). */
export const CLI_USAGE_LINE =
  "Usage: toolfence-host-config <install|uninstall|status|print-script|print-setup|help> [--client <claude-code|codex|cursor|vscode>] [options]; 'toolfence-host-config help' lists every option";

export const CLI_USAGE = `Usage: toolfence-host-config <command> [options]

Commands:
  install       write the hook script and register it with a client
  uninstall     remove the registration and the script
  status        show whether the hook is installed, registered and current
  print-script  print the hook script
  print-setup   print where the files go and the registration block for a client
  help          show this text

Options:
  --client <claude-code|codex|cursor|vscode>  client to set up (status: all when omitted)
  --scope <user|project>                      default: user
  --project <dir>                             project folder for --scope project (default: cwd)
  --home <dir>                                home folder (default: $HOME)
  --allow <dir>                               install: a directory the hook may read (repeat for more);
                                              written to the hook config next to the script as its
                                              real path (symlinks resolved)
  --budget <server>=<size>                    install: attachment budget of one MCP server (as named in
                                              the client config), e.g. linear=7MiB (bytes, KiB or MiB;
                                              repeat for more); the hook denies larger files with a reason
  --node <path>                               the Node executable the registered command runs (absolute
                                              path; default: the Node running this installer)
  --trust-codex-hook                          install --client codex: also write Codex's trust entry
                                              for this hook to config.toml (as trusting it in /hooks does)
  --accept-hook-config                        install: keep a hook config already beside the script
                                              that makes the hook read more than by default (at
                                              project scope install refuses it otherwise)
  --dry-run                                   show the changes without writing
  --json                                      machine-readable output (status, print-setup)
  --version                                   print the package version

Exit codes: 0 success; 1 failure (nothing half-written), or status found an installed hook that
cannot work; 2 usage error.
`;

/**
 * Runs the installer CLI with `argv` (without `node` and the script) and returns the exit code:
 * 0 success, 1 failure (nothing half-written), 2 usage error.
 */
export function runCli(
  argv: readonly string[],
  writer: CliWriter,
  environment: CliEnvironment = {},
): number {
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(argv);
  } catch (error) {
    writer.err(
      `${error instanceof Error ? error.message : 'invalid arguments'}\n${CLI_USAGE_LINE}\n`,
    );
    return 2;
  }
  const { command, values } = parsed;
  if (values.version === true) {
    writer.out(`${VERSION}\n`);
    return 0;
  }
  try {
    const scope = parseScope(values.scope);
    const paths: { home?: string; projectDir?: string; codexHome?: string; node?: string } = {};
    const home = values.home ?? environment.home;
    const projectDir = values.project ?? environment.cwd;
    if (home !== undefined) paths.home = home;
    if (projectDir !== undefined) paths.projectDir = projectDir;
    if (environment.codexHome !== undefined) paths.codexHome = environment.codexHome;
    // What install registers: the Node running this CLI unless --node names another.
    paths.node = values.node ?? process.execPath;
    // Options that only install (or install and uninstall) act on are refused elsewhere, so a
    // command never exits 0 having silently ignored an --allow or --budget it was given.
    if (command !== undefined && command !== 'help') {
      const installOnly = [
        values.allow !== undefined ? '--allow' : undefined,
        values.budget !== undefined ? '--budget' : undefined,
        values['trust-codex-hook'] === true ? '--trust-codex-hook' : undefined,
        values['accept-hook-config'] === true ? '--accept-hook-config' : undefined,
      ].filter((name) => name !== undefined);
      if (command !== 'install' && installOnly.length > 0) {
        throw new InstallUsageError(
          `${installOnly.join(', ')} ${installOnly.length === 1 ? 'applies' : 'apply'} to install only, not ${command.slice(0, 40)}`,
        );
      }
      if (command !== 'install' && command !== 'uninstall' && values['dry-run'] === true) {
        throw new InstallUsageError(
          `--dry-run applies to install and uninstall only, not ${command.slice(0, 40)}`,
        );
      }
    }
    switch (command) {
      case 'help':
        writer.out(CLI_USAGE);
        return 0;
      case undefined:
        writer.err(`a command is missing\n${CLI_USAGE_LINE}\n`);
        return 2;
      case 'print-script':
        writer.out(HOOK_SCRIPT);
        return 0;
      case 'print-setup': {
        const client = requireClient(values.client);
        const setup = getHookSetup(client, scope, paths);
        if (values.json === true) {
          writer.out(`${JSON.stringify(setup, null, 2)}\n`);
          return 0;
        }
        const minimum = CLIENT_MIN_VERSIONS[client];
        writer.out(
          [
            `${minimum.displayName} (${scope} scope), version ${minimum.version} or newer`,
            `  script:   ${setup.scriptPath}`,
            `  config:   ${setup.configPath}`,
            `  matcher:  ${setup.matcher ?? '(none: the client ignores matchers)'}`,
            '  merge this registration into the config (keep the hooks already there):',
            ...JSON.stringify(setup.registration, null, 2)
              .split('\n')
              .map((line) => `    ${line}`),
            ...setup.notes.map((note) => `  note: ${note}`),
            '',
          ].join('\n'),
        );
        return 0;
      }
      case 'install':
      case 'uninstall': {
        const client = requireClient(values.client);
        const allow = values.allow;
        const budget = values.budget;
        const trust = values['trust-codex-hook'] === true;
        const accept = values['accept-hook-config'] === true;
        if (
          command === 'uninstall' &&
          (allow !== undefined || budget !== undefined || trust || accept)
        ) {
          throw new InstallUsageError(
            '--allow, --budget, --trust-codex-hook and --accept-hook-config apply to install only',
          );
        }
        if (trust && client !== 'codex') {
          throw new InstallUsageError('--trust-codex-hook applies to --client codex only');
        }
        const base = paths.projectDir ?? process.cwd();
        const options = {
          client,
          scope,
          dryRun: values['dry-run'] === true,
          ...paths,
          ...(allow === undefined
            ? {}
            : { allowedRoots: allow.map((root) => resolve(base, root)) }),
          ...(budget === undefined ? {} : { toolkitBudgets: parseBudgets(budget) }),
          ...(trust ? { trustCodexHook: true } : {}),
          ...(accept ? { acceptHookConfig: true } : {}),
        };
        const outcome = command === 'install' ? installHook(options) : uninstallHook(options);
        report(outcome, command, writer);
        if (command === 'install' && client === 'codex' && !outcome.dryRun) {
          const status = getHookStatus({ client, scope, ...paths });
          const carried =
            !trust &&
            outcome.changes.some(
              (item) => item.kind === 'codex-config' && item.action !== 'unchanged',
            );
          writer.out(
            status.codex?.trusted === true
              ? `Codex trusts this hook (${status.codex.configTomlPath})${carried ? ': you had trusted the registration this install replaced, so its trust entry now names the new command' : ''}.\n`
              : `next step: Codex skips this hook until you trust it. Open /hooks in Codex and trust it, or run this again with --trust-codex-hook to write the trust entry to ${status.codex?.configTomlPath ?? 'config.toml'}.\n`,
          );
        }
        return 0;
      }
      case 'status': {
        const clients = values.client === undefined ? HOOK_CLIENTS : [requireClient(values.client)];
        const statuses = clients.map((client) => getHookStatus({ client, scope, ...paths }));
        // Failure: a hook that is (partly) installed but cannot work, or the one client asked for
        // is not working. Clients with nothing installed are only listed.
        const failing = statuses.filter(
          (status) =>
            !status.working &&
            (values.client !== undefined || status.scriptInstalled || status.referenced),
        );
        const exitCode = failing.length > 0 ? 1 : 0;
        if (values.json === true) {
          writer.out(`${JSON.stringify(statuses, null, 2)}\n`);
          return exitCode;
        }
        for (const status of statuses) {
          let state: string;
          if (!status.scriptInstalled) state = 'not installed';
          else if (status.outdated) {
            state = `OUTDATED (installed in its earlier form ${LEGACY_HOOK_SCRIPT_FILENAMES.join(' or ')}, which starts slower; this package installs ${HOOK_SCRIPT_FILENAME}): run \`${installCommand(status, values)}\` to migrate it`;
          } else if (status.current)
            state = `installed, protocol ${status.installedProtocol}, current`;
          else {
            state = `STALE (installed protocol ${status.installedProtocol ?? 'unknown'}, this package ships ${status.availableProtocol}): run install again`;
          }
          const registration = status.configProblem
            ? `config problem: ${status.configProblem}`
            : status.registered
              ? `registered in ${status.configPath}`
              : status.referenced && status.outdated
                ? `registered in its earlier form in ${status.configPath}`
                : status.referenced
                  ? `registered differently in ${status.configPath}: run install again`
                  : `not registered in ${status.configPath}`;
          const allowlist = !status.scriptInstalled
            ? ''
            : status.hookConfigProblem !== undefined
              ? `; hook config problem: ${status.hookConfigProblem} (every rewrite is denied)`
              : status.allowedRoots === undefined
                ? '; no allowlist in the hook config (reads any file you can read unless TOOLFENCE_HOOK_ALLOWED_ROOTS is set)'
                : `; allowlist: ${status.allowedRoots.join(', ')}`;
          writer.out(`${status.client} (${status.scope}): ${state}; ${registration}${allowlist}\n`);
          printStatusDetails(status, writer);
        }
        return exitCode;
      }
      default:
        throw new InstallUsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (InstallUsageError.isInstance(error)) {
      writer.err(`${error.code}: ${error.message}\n${CLI_USAGE_LINE}\n`);
      return 2;
    }
    if (HostConfigError.isInstance(error)) {
      const path = typeof error.details?.path === 'string' ? ` (${error.details.path})` : '';
      writer.err(`${error.code}: ${error.message}${path}\n`);
      return 1;
    }
    writer.err(`unexpected failure: ${error instanceof Error ? error.message : 'unknown'}\n`);
    return 1;
  }
}

function parse(argv: readonly string[]) {
  const { positionals, values } = parseArgs({
    args: [...argv],
    allowPositionals: true,
    strict: true,
    options: {
      client: { type: 'string' },
      scope: { type: 'string' },
      project: { type: 'string' },
      home: { type: 'string' },
      'dry-run': { type: 'boolean' },
      allow: { type: 'string', multiple: true },
      budget: { type: 'string', multiple: true },
      'trust-codex-hook': { type: 'boolean' },
      'accept-hook-config': { type: 'boolean' },
      node: { type: 'string' },
      json: { type: 'boolean' },
      version: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (positionals.length > 1) throw new Error(`unexpected argument "${positionals[1]}"`);
  return { command: values.help === true ? 'help' : positionals[0], values };
}

const SIZE_UNITS: Record<string, number> = { '': 1, b: 1, kib: 1024, mib: 1024 * 1024 };

/** `--budget linear=7MiB` values: server name to bytes (bytes, KiB or MiB). */
function parseBudgets(values: readonly string[]): Record<string, number> {
  const budgets: Record<string, number> = {};
  for (const value of values) {
    const match = /^([^=\s]+)=([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)$/.exec(value);
    const unit = SIZE_UNITS[(match?.[3] ?? '').toLowerCase()];
    if (match === null || unit === undefined) {
      throw new InstallUsageError(
        `--budget "${value.slice(0, 60)}" is not <server>=<size>; sizes are bytes, KiB or MiB (e.g. linear=7MiB)`,
      );
    }
    budgets[match[1] as string] = Math.floor(Number(match[2]) * unit);
  }
  return budgets;
}

function printStatusDetails(status: HookStatus, writer: CliWriter): void {
  if (status.hookSettings.length > 0) {
    const list = status.hookSettings.map(
      (setting) =>
        `${setting.name}=${setting.value} (default ${setting.default}${setting.weakens ? '; READS MORE than by default' : ''})`,
    );
    writer.out(`  hook config settings (${status.hookConfigPath}): ${list.join(', ')}\n`);
  }
  if (status.toolkitBudgets !== undefined) {
    const list = Object.entries(status.toolkitBudgets).map(([name, bytes]) => `${name}=${bytes}`);
    writer.out(`  toolkit budgets: ${list.join(', ')}\n`);
  }
  if (status.codex !== undefined && (status.registered || status.outdated)) {
    writer.out(
      `  Codex trust: ${status.codex.trusted ? 'trusted' : 'NOT TRUSTED'} (${status.codex.configTomlPath}); hooks feature: ${status.codex.hooksEnabled ? 'on' : 'OFF'}\n`,
    );
  }
  if (status.working) {
    if (status.scriptInstalled) writer.out('  working: yes\n');
    return;
  }
  if (!status.scriptInstalled && !status.referenced) return;
  for (const problem of status.problems) writer.out(`  NOT WORKING: ${problem}\n`);
}

/** The install command that brings this installation up to date, with the options it needs. */
function installCommand(status: HookStatus, values: { home?: string | undefined }): string {
  const words = ['toolfence-host-config', 'install', '--client', status.client];
  if (status.scope === 'project') {
    // The project folder is the one the config path sits in (its `.claude` etc. parent).
    words.push('--scope', 'project', '--project', shellWord(projectOf(status)));
  }
  if (values.home !== undefined) words.push('--home', shellWord(values.home));
  return words.join(' ');
}

function projectOf(status: HookStatus): string {
  // <project>/.claude/settings.local.json, <project>/.codex/hooks.json,
  // <project>/.cursor/hooks.json, <project>/.github/hooks/<file>.json
  const levels = status.client === 'vscode' ? 3 : 2;
  let folder = status.configPath;
  for (let index = 0; index < levels; index += 1) folder = dirname(folder);
  return folder;
}

function shellWord(value: string): string {
  return /^[A-Za-z0-9_./:@%+=,-]+$/.test(value) ? value : `'${value.replace(/'/g, `'\\''`)}'`;
}

function parseScope(value: string | undefined): HookScope {
  if (value === undefined || value === 'user' || value === 'project') return value ?? 'user';
  throw new InstallUsageError('--scope must be "user" or "project"');
}

function requireClient(value: string | undefined): HookClient {
  if (value !== undefined && (HOOK_CLIENTS as readonly string[]).includes(value))
    return value as HookClient;
  throw new InstallUsageError(`--client must be one of ${HOOK_CLIENTS.join(', ')}`);
}

function report(outcome: HookInstallResult, command: string, writer: CliWriter): void {
  const prefix = outcome.dryRun ? 'would ' : '';
  for (const item of outcome.changes) {
    if (item.action === 'unchanged') {
      writer.out(`unchanged: ${item.path}\n`);
      continue;
    }
    const backup = item.backupPath === undefined ? '' : ` (backup: ${item.backupPath})`;
    const target = item.target === item.path ? '' : ` -> ${item.target}`;
    writer.out(`${prefix}${item.action}: ${item.path}${target}${backup}\n`);
    if (outcome.dryRun && item.kind !== 'script' && item.after !== undefined) {
      writer.out(`${item.after.trimEnd().replace(/^/gm, '    | ')}\n`);
    }
  }
  const migrated = outcome.changes.filter(
    (item) =>
      item.kind === 'script' && item.action === 'delete' && item.path !== outcome.setup.scriptPath,
  );
  if (command === 'install' && migrated.length > 0) {
    writer.out(
      `${prefix}migrate: the earlier form ${migrated.map((item) => basename(item.path)).join(', ')} is replaced by ${basename(outcome.setup.scriptPath)} (same hook, faster start)\n`,
    );
  }
  for (const item of outcome.changes) {
    if (item.kind !== 'hook-config' || item.after === undefined) continue;
    let roots: unknown;
    try {
      roots = (JSON.parse(item.after) as { allowedRoots?: unknown }).allowedRoots;
    } catch {
      roots = undefined; // a file left as it was, comments and all: status reports it
    }
    if (Array.isArray(roots)) writer.out(`${prefix}allowlist: ${roots.join(', ')}\n`);
  }
  for (const warning of outcome.warnings) writer.out(`warning: ${warning}\n`);
  if (!outcome.changed) writer.out(`nothing to ${command}: already done\n`);
  else if (!outcome.dryRun && command === 'install') {
    for (const note of outcome.setup.notes) writer.out(`note: ${note}\n`);
  }
}
