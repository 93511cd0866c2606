import { spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { codexHookTrustHash, readCodexConfig } from '../src/cli/codex-config.js';
import {
  getHookSetup,
  getHookStatus,
  HOOK_CLIENTS,
  HOOK_SCRIPT,
  type HookClient,
  type HookScope,
  type HookSetup,
  installHook,
  uninstallHook,
} from '../src/index.js';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

// Earlier versions installed the hook as an ES module, `toolfence_attachment_substitution.mjs`;
// this one installs `toolfence_attachment_substitution.cjs`. An installation of the earlier form
// is set up here exactly as the earlier installer wrote it: its script (the real earlier file,
// test/fixtures/legacy) beside where the new one goes, and the same registration naming it.

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const LEGACY_SCRIPT = readFileSync(
  new URL('./fixtures/legacy/toolfence_attachment_substitution.mjs', import.meta.url),
  'utf8',
);
const OLD = 'toolfence_attachment_substitution.mjs';
const NEW = 'toolfence_attachment_substitution.cjs';

let home: string;
let project: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-home-'));
  project = mkdtempSync(join(tmpdir(), 'toolfence-project-'));
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
  rmSync(project, { recursive: true, force: true });
});

function cli(args: string[]) {
  const env: Record<string, string | undefined> = { ...process.env, HOME: home, USERPROFILE: home };
  delete env.CODEX_HOME;
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd: project,
    env,
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const setupFor = (client: HookClient, scope: HookScope = 'user') =>
  getHookSetup(client, scope, { home, projectDir: project, node: process.execPath });

const paths = (scope: HookScope) =>
  scope === 'user' ? { home } : { home, scope, projectDir: project };

function write(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

/** The entry the earlier installer wrote: today's, naming the `.mjs` file. */
function legacyEntry(setup: HookSetup): Record<string, unknown> {
  const text = JSON.stringify(setup.entry);
  expect(text).toContain(NEW);
  return JSON.parse(text.split(NEW).join(OLD));
}

function legacyScriptPath(setup: HookSetup): string {
  return join(dirname(setup.scriptPath), OLD);
}

const others = (setup: HookSetup): [unknown, unknown] =>
  setup.format.grouped
    ? [
        { matcher: 'shell', hooks: [{ type: 'command', command: 'guard-before' }] },
        { matcher: 'shell', hooks: [{ type: 'command', command: 'guard-after' }] },
      ]
    : setup.client === 'cursor'
      ? [
          { command: 'audit-before', matcher: 'Shell' },
          { command: 'audit-after', matcher: 'Shell' },
        ]
      : [
          { type: 'command', command: 'other-before' },
          { type: 'command', command: 'other-after' },
        ];

/** An installation of the earlier form, between someone else's two hooks. */
function installLegacy(setup: HookSetup): [unknown, unknown] {
  const [before, after] = others(setup);
  write(legacyScriptPath(setup), LEGACY_SCRIPT);
  write(
    setup.configPath,
    `${JSON.stringify(
      {
        ...setup.format.topLevel,
        hooks: { [setup.format.eventKey]: [before, legacyEntry(setup), after] },
      },
      null,
      2,
    )}\n`,
  );
  return [before, after];
}

function eventList(setup: HookSetup): unknown[] {
  return JSON.parse(readFileSync(setup.configPath, 'utf8')).hooks[setup.format.eventKey];
}

const matrix = HOOK_CLIENTS.flatMap((client) =>
  (['user', 'project'] as const).map((scope) => ({ client, scope })),
);

describe('migrating an installation of the earlier .mjs form', () => {
  it.each(matrix)(
    'status reports $client ($scope) as outdated, with the command to fix it',
    ({ client, scope }) => {
      const setup = setupFor(client, scope);
      installLegacy(setup);
      const status = getHookStatus({ client, ...paths(scope) });
      expect(status).toMatchObject({
        scriptInstalled: true,
        installedProtocol: 1,
        outdated: true,
        legacyScriptPath: legacyScriptPath(setup),
        current: false,
        stale: true,
        registered: false,
        referenced: true,
      });
      // The earlier form still runs (Codex: once trusted), so it is outdated, not broken.
      if (client === 'codex') {
        expect(status.problems).toEqual([expect.stringContaining('Codex has not trusted')]);
      } else {
        expect(status.problems).toEqual([]);
        expect(status.working).toBe(true);
      }
      const args = [
        'status',
        '--client',
        client,
        ...(scope === 'project' ? ['--scope', scope] : []),
      ];
      const text = cli(args);
      expect(text.code).toBe(client === 'codex' ? 1 : 0);
      const fix = `toolfence-host-config install --client ${client}${scope === 'project' ? ` --scope project --project ${project}` : ''}`;
      expect(text.stdout).toContain(
        `${client} (${scope}): OUTDATED (installed in its earlier form ${OLD}`,
      );
      expect(text.stdout).toContain(`run \`${fix}\` to migrate it`);
      expect(text.stdout).toContain(`registered in its earlier form in ${setup.configPath}`);
    },
  );

  it.each(matrix)(
    'install migrates $client ($scope) in place: new file, same position, old file gone',
    ({ client, scope }) => {
      const setup = setupFor(client, scope);
      const [before, after] = installLegacy(setup);
      const args = [
        'install',
        '--client',
        client,
        ...(scope === 'project' ? ['--scope', scope] : []),
      ];
      const result = cli(args);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain(`delete: ${legacyScriptPath(setup)}`);
      expect(result.stdout).toContain(`migrate: the earlier form ${OLD} is replaced by ${NEW}`);
      expect(readFileSync(setup.scriptPath, 'utf8')).toBe(HOOK_SCRIPT);
      expect(existsSync(legacyScriptPath(setup))).toBe(false);
      expect(eventList(setup)).toEqual([before, setup.entry, after]);
      expect(readFileSync(setup.configPath, 'utf8')).not.toContain(OLD);
      const status = getHookStatus({ client, ...paths(scope) });
      expect(status).toMatchObject({
        outdated: false,
        legacyScriptPath: undefined,
        current: true,
        stale: false,
        registered: true,
      });
      if (client !== 'codex') expect(status.working).toBe(true);
      // Done once: a second install changes nothing.
      expect(cli(args).stdout).toContain('nothing to install: already done');
    },
  );

  it.each(HOOK_CLIENTS)('the migrated %s hook runs and rewrites an attachment', async (client) => {
    const setup = setupFor(client);
    installLegacy(setup);
    installHook({ client, home });
    const file = join(home, 'note.txt');
    writeFileSync(file, 'migrated\n');
    const result = await runHook(stdinFor(client, { attachment: { source: fileUrl(file) } }), {
      script: setup.scriptPath,
    });
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(Buffer.from('migrated\n').toString('base64'));
  });

  it('migrates a registration whose group also holds another handler, keeping that handler', () => {
    const setup = setupFor('claude-code');
    write(legacyScriptPath(setup), LEGACY_SCRIPT);
    const shared = {
      matcher: 'mcp__.*',
      hooks: [
        { type: 'command', command: `node ${legacyScriptPath(setup)}`, timeout: 120 },
        { type: 'command', command: 'keep-me' },
      ],
    };
    write(setup.configPath, `${JSON.stringify({ hooks: { PreToolUse: [shared] } })}\n`);
    expect(installHook({ client: 'claude-code', home }).changed).toBe(true);
    expect(eventList(setup)).toEqual([
      { matcher: 'mcp__.*', hooks: [{ type: 'command', command: 'keep-me' }] },
      setup.entry,
    ]);
  });

  it('with only the old file left (no registration), install deletes it and registers the new one', () => {
    const setup = setupFor('cursor');
    write(legacyScriptPath(setup), LEGACY_SCRIPT);
    expect(getHookStatus({ client: 'cursor', home })).toMatchObject({
      outdated: true,
      registered: false,
      problems: [`not registered in ${setup.configPath}`],
    });
    installHook({ client: 'cursor', home });
    expect(existsSync(legacyScriptPath(setup))).toBe(false);
    expect(getHookStatus({ client: 'cursor', home }).working).toBe(true);
  });

  it('reports an old registration whose old file is gone as not working', () => {
    const setup = setupFor('vscode');
    installLegacy(setup);
    rmSync(legacyScriptPath(setup));
    const status = getHookStatus({ client: 'vscode', home });
    expect(status.outdated).toBe(true);
    expect(status.scriptInstalled).toBe(false);
    expect(status.working).toBe(false);
    expect(cli(['status', '--client', 'vscode']).code).toBe(1);
  });

  it('reports an old registration beside a new file (half migrated by hand) as not working', () => {
    const setup = setupFor('claude-code');
    installLegacy(setup);
    rmSync(legacyScriptPath(setup));
    write(setup.scriptPath, HOOK_SCRIPT);
    const status = getHookStatus({ client: 'claude-code', home });
    expect(status).toMatchObject({ outdated: true, current: false, working: false });
    expect(status.problems).toEqual([
      expect.stringContaining(`the registered command runs the earlier ${OLD}, which is not there`),
    ]);
  });

  // Creating a symlink needs a privilege on Windows.
  it.skipIf(process.platform === 'win32')(
    'removes a symlinked old script as a link, keeping the file it points at',
    () => {
      const setup = setupFor('claude-code');
      installLegacy(setup);
      const kept = join(home, 'dotfiles', OLD);
      write(kept, LEGACY_SCRIPT);
      rmSync(legacyScriptPath(setup));
      symlinkSync(kept, legacyScriptPath(setup));
      installHook({ client: 'claude-code', home });
      expect(() => lstatSync(legacyScriptPath(setup))).toThrow();
      expect(readFileSync(kept, 'utf8')).toBe(LEGACY_SCRIPT);
      // The same for uninstall: the link goes, its target stays.
      const target = join(home, 'dotfiles', NEW);
      write(target, HOOK_SCRIPT);
      rmSync(setup.scriptPath);
      symlinkSync(target, setup.scriptPath);
      uninstallHook({ client: 'claude-code', home });
      expect(() => lstatSync(setup.scriptPath)).toThrow();
      expect(readFileSync(target, 'utf8')).toBe(HOOK_SCRIPT);
    },
  );

  it('shows the migration in a dry run and writes nothing', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    const config = readFileSync(setup.configPath, 'utf8');
    const result = cli(['install', '--client', 'codex', '--dry-run']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`would delete: ${legacyScriptPath(setup)}`);
    expect(result.stdout).toContain(`would migrate: the earlier form ${OLD}`);
    expect(readFileSync(setup.configPath, 'utf8')).toBe(config);
    expect(readFileSync(legacyScriptPath(setup), 'utf8')).toBe(LEGACY_SCRIPT);
    expect(existsSync(setup.scriptPath)).toBe(false);
  });

  it.each(matrix)(
    'uninstall removes both forms for $client ($scope), keeping the other hooks',
    ({ client, scope }) => {
      const setup = setupFor(client, scope);
      const [before, after] = installLegacy(setup);
      // Half migrated: the new file is there too.
      write(setup.scriptPath, HOOK_SCRIPT);
      const outcome = uninstallHook({ client, ...paths(scope) });
      expect(
        outcome.changes.filter((item) => item.action === 'delete').map((item) => item.path),
      ).toEqual(expect.arrayContaining([setup.scriptPath, legacyScriptPath(setup)]));
      expect(existsSync(setup.scriptPath)).toBe(false);
      expect(existsSync(legacyScriptPath(setup))).toBe(false);
      expect(eventList(setup)).toEqual([before, after]);
      expect(getHookStatus({ client, ...paths(scope) })).toMatchObject({
        scriptInstalled: false,
        outdated: false,
        referenced: false,
      });
    },
  );
});

describe('migrating a Codex installation keeps its trust', () => {
  const toml = () => join(home, '.codex', 'config.toml');

  /** The trust entry Codex writes when the user trusts the registration at `index` in /hooks. */
  function trustLegacy(setup: HookSetup, index: number, extra = ''): string {
    const entry = legacyEntry(setup) as { matcher: string; hooks: [{ command: string }] };
    const hash = codexHookTrustHash('pre_tool_use', entry.matcher, {
      command: entry.hooks[0].command,
      timeout: 120,
    });
    write(
      toml(),
      `model = "gpt-5"\n\n[hooks.state.${JSON.stringify(`${setup.configPath}:pre_tool_use:${index}:0`)}]\ntrusted_hash = "${hash}"\n${extra}`,
    );
    return hash;
  }

  it('status sees the trusted old form as working, but outdated', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    trustLegacy(setup, 1);
    const status = getHookStatus({ client: 'codex', home });
    expect(status).toMatchObject({ outdated: true, working: true });
    expect(status.codex?.trusted).toBe(true);
    const text = cli(['status', '--client', 'codex']);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('OUTDATED');
    expect(text.stdout).toContain('Codex trust: trusted');
  });

  it('install moves the trust to the new command (same key, new hash), and says so', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    const oldHash = trustLegacy(setup, 1);
    const result = cli(['install', '--client', 'codex']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(
      'Codex trusts this hook (' +
        toml() +
        '): you had trusted the registration this install replaced',
    );
    const status = getHookStatus({ client: 'codex', home });
    expect(status).toMatchObject({ outdated: false, current: true, working: true });
    const key = `${setup.configPath}:pre_tool_use:1:0`;
    expect(status.codex?.key).toBe(key);
    const newHash = codexHookTrustHash('pre_tool_use', 'mcp__.*', {
      command: setup.command,
      timeout: 120,
    });
    expect(newHash).not.toBe(oldHash);
    const text = readFileSync(toml(), 'utf8');
    expect(readCodexConfig(text).hookStates.get(key)?.trustedHash).toBe(newHash);
    expect(text).not.toContain(oldHash);
    expect(text.startsWith('model = "gpt-5"\n')).toBe(true);
    expect(readFileSync(`${toml()}.toolfence.bak`, 'utf8')).toContain(oldHash);
  });

  it('leaves an untrusted old form untrusted (install never trusts on its own)', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    const result = cli(['install', '--client', 'codex']);
    expect(result.stdout).toContain('next step: Codex skips this hook until you trust it');
    expect(existsSync(toml())).toBe(false);
    expect(getHookStatus({ client: 'codex', home }).codex?.trusted).toBe(false);
  });

  it('does not carry trust that names another position (a stale entry for a different hook)', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    trustLegacy(setup, 0);
    installHook({ client: 'codex', home });
    expect(getHookStatus({ client: 'codex', home }).codex?.trusted).toBe(false);
  });

  it('keeps a disabled old form disabled: no trust is carried', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    trustLegacy(setup, 1, 'enabled = false\n');
    const before = readFileSync(toml(), 'utf8');
    installHook({ client: 'codex', home });
    expect(readFileSync(toml(), 'utf8')).toBe(before);
    expect(getHookStatus({ client: 'codex', home }).codex?.trusted).toBe(false);
  });

  it('with --trust-codex-hook, trusts the new command whether or not the old one was', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    expect(cli(['install', '--client', 'codex', '--trust-codex-hook']).code).toBe(0);
    expect(getHookStatus({ client: 'codex', home })).toMatchObject({
      outdated: false,
      working: true,
    });
  });

  it('a config.toml that cannot be read does not stop the migration', () => {
    const setup = setupFor('codex');
    installLegacy(setup);
    mkdirSync(toml(), { recursive: true });
    expect(installHook({ client: 'codex', home }).changed).toBe(true);
    expect(existsSync(legacyScriptPath(setup))).toBe(false);
    expect(eventList(setup)).toContainEqual(setup.entry);
  });
});
