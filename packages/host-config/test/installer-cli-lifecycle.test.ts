import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  codexHookTrustHash,
  readCodexConfig,
  withCodexTrustEntry,
} from '../src/cli/codex-config.js';
import {
  getHookSetup,
  getHookStatus,
  type HookClient,
  installHook,
  VERSION,
} from '../src/index.js';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

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

function cli(args: string[], environment: Record<string, string> = {}) {
  const env: Record<string, string | undefined> = {
    ...process.env,
    HOME: home,
    USERPROFILE: home,
    ...environment,
  };
  delete env.CODEX_HOME;
  const result = spawnSync(process.execPath, [CLI, ...args], {
    cwd: project,
    env,
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const setupFor = (client: HookClient, scope: 'user' | 'project' = 'user') =>
  getHookSetup(client, scope, { home, projectDir: project, node: process.execPath });

function write(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
}

describe('installer CLI basics', () => {
  it('prints the package version with --version', () => {
    const result = cli(['--version']);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(`${VERSION}\n`);
  });

  it('prints one usage line on a usage error, not the whole help', () => {
    const result = cli(['install', '--client', 'emacs']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('INSTALL_USAGE_INVALID: --client must be one of');
    expect(result.stderr.trim().split('\n')).toHaveLength(2);
    expect(result.stderr).not.toContain('Commands:');
    expect(cli(['help']).stdout).toContain('Commands:');
  });

  it.each([
    ['a folder that does not exist', () => join(home, 'missing')],
    ['a relative path', () => 'relative/home'],
    ['a file, not a folder', () => '/dev/null'],
    ['a path with a newline', () => `${home}\nx`],
    ['a path longer than 4096 characters', () => `/${'x'.repeat(5000)}`],
  ])('fails fast when HOME is %s', (_name, value) => {
    const started = Date.now();
    const result = cli(['install', '--client', 'claude-code'], { HOME: value() });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('INSTALL_USAGE_INVALID: home');
    expect(result.stderr).toContain('HOME');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(existsSync(join(home, 'missing'))).toBe(false);
  });

  it('refuses unknown option keys in the library', () => {
    expect(() => installHook({ client: 'codex', home, dryrun: true } as never)).toThrow(
      /unknown option "dryrun"/,
    );
  });
});

describe('uninstall removes what install created', () => {
  it.each(['claude-code', 'codex', 'cursor', 'vscode'] as const)(
    'leaves no file or folder behind for %s in an empty home',
    (client) => {
      const setup = setupFor(client);
      expect(
        cli(['install', '--client', client, '--allow', home, '--budget', 'files=1MiB']).code,
      ).toBe(0);
      expect(
        existsSync(
          join(dirname(setup.scriptPath), 'toolfence_attachment_substitution.config.json'),
        ),
      ).toBe(true);
      expect(cli(['uninstall', '--client', client]).code).toBe(0);
      expect(existsSync(setup.configPath)).toBe(false);
      expect(existsSync(setup.scriptPath)).toBe(false);
      expect(existsSync(dirname(setup.scriptPath))).toBe(false);
    },
  );

  it('keeps a config that existed before, without an empty "hooks" object', () => {
    const setup = setupFor('claude-code');
    write(setup.configPath, '{\n  "model": "opus"\n}\n');
    expect(cli(['install', '--client', 'claude-code']).code).toBe(0);
    expect(cli(['uninstall', '--client', 'claude-code']).code).toBe(0);
    expect(JSON.parse(readFileSync(setup.configPath, 'utf8'))).toEqual({ model: 'opus' });
  });

  it('keeps a hooks folder that holds other files', () => {
    const setup = setupFor('claude-code');
    write(join(dirname(setup.scriptPath), 'mine.sh'), 'echo\n');
    expect(cli(['install', '--client', 'claude-code']).code).toBe(0);
    expect(cli(['uninstall', '--client', 'claude-code']).code).toBe(0);
    expect(existsSync(join(dirname(setup.scriptPath), 'mine.sh'))).toBe(true);
  });
});

describe('config files with comments (JSONC)', () => {
  const jsonc = (command: string) => `{
  // VS Code hook files are JSONC
  "hooks": {
    "PreToolUse": [
      { "type": "command", "command": ${JSON.stringify(command)}, "timeout": 120 }, /* ours */
    ],
  },
}
`;

  it('reads a JSONC config: status sees the registration', () => {
    const setup = setupFor('vscode');
    expect(cli(['install', '--client', 'vscode']).code).toBe(0);
    write(setup.configPath, jsonc(setup.command));
    const status = getHookStatus({ client: 'vscode', home });
    expect(status.configProblem).toBeUndefined();
    expect(status.registered).toBe(true);
    expect(status.working).toBe(true);
    // Nothing to write: install succeeds and leaves the comments alone.
    expect(cli(['install', '--client', 'vscode']).code).toBe(0);
    expect(readFileSync(setup.configPath, 'utf8')).toBe(jsonc(setup.command));
  });

  it('refuses a write that would drop comments, naming the line and the way out', () => {
    const setup = setupFor('vscode');
    const text = jsonc('node other-hook.mjs');
    write(setup.configPath, text);
    const result = cli(['install', '--client', 'vscode']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('INSTALL_CONFIG_MALFORMED');
    expect(result.stderr).toContain('a comment on line 2');
    expect(result.stderr).toContain('print-setup');
    expect(readFileSync(setup.configPath, 'utf8')).toBe(text);
    expect(existsSync(setup.scriptPath)).toBe(false);
  });

  it('refuses a write that would drop a trailing comma', () => {
    const setup = setupFor('claude-code');
    const text = '{\n  "model": "opus",\n}\n';
    write(setup.configPath, text);
    const result = cli(['install', '--client', 'claude-code']);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('a trailing comma on line 2');
    expect(readFileSync(setup.configPath, 'utf8')).toBe(text);
  });

  it('keeps comment markers inside strings', () => {
    const setup = setupFor('claude-code');
    write(setup.configPath, '{ "statusLine": "// not a comment /* nor this */" }\n');
    expect(cli(['install', '--client', 'claude-code']).code).toBe(0);
    expect(JSON.parse(readFileSync(setup.configPath, 'utf8')).statusLine).toBe(
      '// not a comment /* nor this */',
    );
  });
});

describe('status exits non-zero when the installed hook cannot work', () => {
  it('exits 0 when nothing is installed, and 0 for a working hook', () => {
    expect(cli(['status']).code).toBe(0);
    expect(cli(['install', '--client', 'claude-code']).code).toBe(0);
    const result = cli(['status']);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain('working: yes');
  });

  it('exits 1 when the registration was removed from the client config', () => {
    const setup = setupFor('cursor');
    expect(cli(['install', '--client', 'cursor']).code).toBe(0);
    write(setup.configPath, '{ "version": 1 }\n');
    const result = cli(['status']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('NOT WORKING: not registered');
  });

  it('exits 1 when the hook config is invalid (every rewrite would be denied)', () => {
    const setup = setupFor('claude-code');
    expect(cli(['install', '--client', 'claude-code']).code).toBe(0);
    write(
      join(dirname(setup.scriptPath), 'toolfence_attachment_substitution.config.json'),
      '{ // a comment the hook cannot read\n "allowedRoots": ["/tmp"] }\n',
    );
    const result = cli(['status', '--client', 'claude-code']);
    expect(result.code).toBe(1);
    expect(result.stdout).toContain('not plain JSON');
  });

  it('exits 1 for a client asked for by name that is not installed', () => {
    expect(cli(['status', '--client', 'codex']).code).toBe(1);
  });
});

describe('Codex trust', () => {
  it('reports an untrusted Codex hook as not working, and explains the trust step on install', () => {
    const install = cli(['install', '--client', 'codex']);
    expect(install.code).toBe(0);
    expect(install.stdout).toContain('next step: Codex skips this hook until you trust it');
    expect(install.stdout).toContain('default_tools_approval_mode');
    expect(existsSync(join(home, '.codex', 'config.toml'))).toBe(false);
    const status = cli(['status', '--client', 'codex']);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain('NOT TRUSTED');
    expect(status.stdout).toContain('Codex has not trusted this hook');
  });

  it('writes the trust entry only with --trust-codex-hook, keeping config.toml otherwise intact', () => {
    const toml = join(home, '.codex', 'config.toml');
    const before =
      'model = "gpt-5"\n\n[mcp_servers.files]\ncommand = "node"\nargs = ["server.mjs"]\n';
    write(toml, before);
    const install = cli(['install', '--client', 'codex', '--trust-codex-hook']);
    expect(install.code).toBe(0);
    expect(install.stdout).toContain('Codex trusts this hook');
    const after = readFileSync(toml, 'utf8');
    expect(after.startsWith(before)).toBe(true);
    const setup = setupFor('codex');
    const key = `${setup.configPath}:pre_tool_use:0:0`;
    expect(after).toContain(`[hooks.state.${JSON.stringify(key)}]`);
    expect(readFileSync(`${toml}.toolfence.bak`, 'utf8')).toBe(before);
    const status = cli(['status', '--client', 'codex']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain('Codex trust: trusted');
    // A second run changes nothing.
    expect(cli(['install', '--client', 'codex', '--trust-codex-hook']).stdout).toContain(
      'already done',
    );
  });

  it('keys the trust entry by the position of the registration in hooks.json', () => {
    const setup = setupFor('codex');
    write(
      setup.configPath,
      `${JSON.stringify({ hooks: { PreToolUse: [{ matcher: 'shell', hooks: [{ type: 'command', command: 'guard' }] }] } })}\n`,
    );
    expect(cli(['install', '--client', 'codex', '--trust-codex-hook']).code).toBe(0);
    const toml = readFileSync(join(home, '.codex', 'config.toml'), 'utf8');
    expect(toml).toContain(`${setup.configPath}:pre_tool_use:1:0`);
  });

  it('reports a trust entry for an earlier definition (hash differs) as not working', () => {
    expect(cli(['install', '--client', 'codex']).code).toBe(0);
    const key = `${setupFor('codex').configPath}:pre_tool_use:0:0`;
    write(
      join(home, '.codex', 'config.toml'),
      `[hooks.state.${JSON.stringify(key)}]\ntrusted_hash = "sha256:0000"\n`,
    );
    const status = cli(['status', '--client', 'codex']);
    expect(status.code).toBe(1);
    expect(status.stdout).toContain('trusted an earlier definition');
  });

  it.each([['[features]\nhooks = false\n'], ['[features]\ncodex_hooks = false\n']])(
    'reports hooks turned off in config.toml (%s)',
    (features) => {
      expect(cli(['install', '--client', 'codex', '--trust-codex-hook']).code).toBe(0);
      const toml = join(home, '.codex', 'config.toml');
      writeFileSync(toml, `${readFileSync(toml, 'utf8')}\n${features}`);
      const status = cli(['status', '--client', 'codex']);
      expect(status.code).toBe(1);
      expect(status.stdout).toContain('hooks are turned off');
    },
  );

  it('refuses --trust-codex-hook for another client', () => {
    expect(cli(['install', '--client', 'cursor', '--trust-codex-hook']).code).toBe(2);
  });

  it('hashes the normalized identity the way Codex does (sorted keys, defaults filled)', () => {
    const hash = codexHookTrustHash('pre_tool_use', 'mcp__.*', {
      command: 'node /h.mjs',
      timeout: 120,
    });
    // sha256 of {"event_name":"pre_tool_use","hooks":[{"async":false,"command":"node /h.mjs","timeout":120,"type":"command"}],"matcher":"mcp__.*"}
    expect(hash).toBe(
      `sha256:${createHash('sha256').update('{"event_name":"pre_tool_use","hooks":[{"async":false,"command":"node /h.mjs","timeout":120,"type":"command"}],"matcher":"mcp__.*"}').digest('hex')}`,
    );
    expect(codexHookTrustHash('pre_tool_use', undefined, { command: 'x' })).not.toBe(
      codexHookTrustHash('pre_tool_use', undefined, { command: 'x', timeout: 600 - 1 }),
    );
  });

  it('reads trust entries written as tables, dotted keys or inline tables', () => {
    const facts = readCodexConfig(
      [
        '# comment',
        'notes = """',
        '[hooks.state."fake"]',
        '"""',
        '[hooks.state."/a/hooks.json:pre_tool_use:0:0"]',
        'trusted_hash = "sha256:aa" # trailing comment',
        'enabled = false',
        "[hooks.state.'/b/hooks.json:pre_tool_use:0:0']",
        "trusted_hash = 'sha256:bb'",
        '[hooks]',
        'state."/c:pre_tool_use:0:0".trusted_hash = "sha256:cc"',
        '[hooks.state]',
        '"/d:pre_tool_use:0:0" = { trusted_hash = "sha256:dd" }',
        '[features]',
        'codex_hooks = true',
      ].join('\n'),
    );
    expect(facts.hookStates.get('fake')).toBeUndefined();
    expect(facts.hookStates.get('/a/hooks.json:pre_tool_use:0:0')).toEqual({
      trustedHash: 'sha256:aa',
      enabled: false,
    });
    expect(facts.hookStates.get('/b/hooks.json:pre_tool_use:0:0')?.trustedHash).toBe('sha256:bb');
    expect(facts.hookStates.get('/c:pre_tool_use:0:0')?.trustedHash).toBe('sha256:cc');
    expect(facts.hookStates.get('/d:pre_tool_use:0:0')?.trustedHash).toBe('sha256:dd');
    expect(facts.codexHooksFeature).toBe(true);
    expect(facts.hooksFeature).toBeUndefined();
    expect(
      withCodexTrustEntry('[hooks.state]\n"/d" = { trusted_hash = "x" }\n', '/d', 'y'),
    ).toBeUndefined();
    expect(
      withCodexTrustEntry(
        '[hooks.state."/a"]\ntrusted_hash = "old"\n[other]\nx = 1\n',
        '/a',
        'new',
      ),
    ).toBe('[hooks.state."/a"]\ntrusted_hash = "new"\n[other]\nx = 1\n');
  });
});

describe('per-toolkit attachment budget', () => {
  it('writes --budget to the hook config, and the installed hook enforces it with the size in the reason', async () => {
    const setup = setupFor('claude-code');
    expect(
      cli([
        'install',
        '--client',
        'claude-code',
        '--budget',
        'files=1KiB',
        '--budget',
        'other=7MiB',
      ]).code,
    ).toBe(0);
    const config = JSON.parse(
      readFileSync(
        join(dirname(setup.scriptPath), 'toolfence_attachment_substitution.config.json'),
        'utf8',
      ),
    );
    expect(config.toolkitBudgets).toEqual({ files: 1024, other: 7340032 });
    const under = join(home, 'under.bin');
    const over = join(home, 'over.bin');
    writeFileSync(under, Buffer.alloc(1024, 1));
    writeFileSync(over, Buffer.alloc(1025, 1));
    // stdinFor names the tool mcp__files__upload: the "files" budget applies.
    const ok = await runHook(stdinFor('claude-code', { attachment: { source: fileUrl(under) } }), {
      script: setup.scriptPath,
    });
    expect(JSON.parse(ok.stdout).hookSpecificOutput.updatedInput.attachment.filename).toBe(
      'under.bin',
    );
    const denied = await runHook(
      stdinFor('claude-code', { attachment: { source: fileUrl(over) } }),
      {
        script: setup.scriptPath,
      },
    );
    expect(JSON.parse(denied.stdout).hookSpecificOutput.permissionDecisionReason).toBe(
      'toolfence attachment hook: HOOK_TOOLKIT_BUDGET_EXCEEDED: attachment: the file is 1 KiB (1025 bytes); this toolkit (files) accepts up to 1 KiB (1024 bytes) of attachments per call. Attach a smaller file or split it across calls. The tool call was not sent.',
    );
    expect(cli(['status', '--client', 'claude-code']).stdout).toContain(
      'toolkit budgets: files=1024, other=7340032',
    );
  });

  it('merges budgets across installs', () => {
    const setup = setupFor('codex');
    expect(cli(['install', '--client', 'codex', '--budget', 'a=100']).code).toBe(0);
    expect(cli(['install', '--client', 'codex', '--budget', 'b=200']).code).toBe(0);
    const config = JSON.parse(
      readFileSync(
        join(dirname(setup.scriptPath), 'toolfence_attachment_substitution.config.json'),
        'utf8',
      ),
    );
    expect(config.toolkitBudgets).toEqual({ a: 100, b: 200 });
  });

  it.each([['files'], ['files=7GB'], ['bad name=1'], ['files=0'], ['files=300MiB']])(
    'refuses --budget %s',
    (value) => {
      expect(cli(['install', '--client', 'codex', '--budget', value]).code).toBe(2);
    },
  );
});
