import { realpathSync } from 'node:fs';
import {
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readlink,
  rm,
  symlink,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import jsonc from 'jsonc-parser';
import { parse as parseToml } from 'smol-toml';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';
import { type ClientKind, importClientServers } from '../src/gateway/client-formats.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';

const FIXTURES = fileURLToPath(new URL('./fixtures/clients/', import.meta.url));
const CLI_SCRIPT = realpathSync(fileURLToPath(new URL('../dist/bin/main.js', import.meta.url)));

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-wrap-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

async function cli(args: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: { HOME: join(folder, 'home'), ...env },
    cwd: folder,
  });
  return { code, out: out.join(''), err: err.join('') };
}

interface Case {
  readonly client: ClientKind;
  readonly fixture: string;
  readonly place: string;
  readonly extra?: string[];
  readonly listed: (text: string) => Record<string, unknown>;
  readonly expected: Record<string, unknown>;
}

const json = (text: string) => jsonc.parse(text, [], { allowTrailingComma: true });

/* biome-ignore-start lint/suspicious/noTemplateCurlyInString: the client variable syntax under test */
const cases: Case[] = [
  {
    client: 'claude',
    fixture: 'claude.mcp.json',
    place: '.mcp.json',
    listed: (text) => json(text).mcpServers,
    expected: {
      github: {
        type: 'http',
        url: 'https://api.githubcopilot.com/mcp/',
        headers: { Authorization: 'Bearer ${GITHUB_TOKEN}' },
      },
      filesystem: {
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-filesystem', '${PROJECT_ROOT:-/tmp}'],
        env: { LOG_LEVEL: '${LOG_LEVEL:-info}' },
      },
    },
  },
  {
    client: 'claude',
    fixture: 'claude.user.json',
    place: 'home/.claude.json',
    extra: ['--file', 'home/.claude.json', '--project', '/home/dev/app'],
    listed: (text) => json(text).projects['/home/dev/app'].mcpServers,
    expected: { sentry: { type: 'http', url: 'https://mcp.sentry.dev/mcp' } },
  },
  {
    client: 'cursor',
    fixture: 'cursor.mcp.json',
    place: '.cursor/mcp.json',
    listed: (text) => json(text).mcpServers,
    expected: {
      postgres: {
        command: 'npx',
        args: ['-y', '@modelcontextprotocol/server-postgres', '${env:DATABASE_URL}'],
      },
      notes: {
        command: 'node',
        args: ['<folder>/tools/notes-server.js'],
        env: { NOTES_DIR: '<folder>/home/notes' },
      },
      linear: {
        url: 'https://mcp.linear.app/mcp',
        headers: { Authorization: 'Bearer ${env:LINEAR_API_KEY}' },
      },
    },
  },
  {
    client: 'vscode',
    fixture: 'vscode.mcp.json',
    place: '.vscode/mcp.json',
    listed: (text) => json(text).servers,
    expected: {
      perplexity: {
        type: 'stdio',
        command: 'npx',
        args: ['-y', 'server-perplexity-ask'],
        env: { PERPLEXITY_API_KEY: '${TOOLFENCE_INPUT_PERPLEXITY_KEY}' },
      },
      github: { type: 'http', url: 'https://api.githubcopilot.com/mcp/' },
    },
  },
  {
    client: 'codex',
    fixture: 'codex.config.toml',
    place: 'home/.codex/config.toml',
    listed: (text) => parseToml(text).mcp_servers as Record<string, unknown>,
    expected: {
      docs: {
        command: 'npx',
        args: ['-y', '@upstash/context7-mcp'],
        env: { LOG_LEVEL: 'warn', CONTEXT7_API_KEY: '${CONTEXT7_API_KEY:-}' },
      },
      figma: {
        url: 'https://mcp.figma.com/mcp',
        headers: {
          'X-Figma-Region': 'us-east-1',
          Authorization: 'Bearer ${FIGMA_OAUTH_TOKEN}',
        },
        allow: ['get_file'],
      },
    },
  },
];
/* biome-ignore-end lint/suspicious/noTemplateCurlyInString: the client variable syntax under test */

describe('toolfence-mcp wrap and unwrap', { timeout: 60_000 }, () => {
  it.each(cases)(
    'round-trips $client ($fixture) byte for byte',
    async (item) => {
      const file = join(folder, item.place);
      await mkdir(dirname(file), { recursive: true });
      await copyFile(join(FIXTURES, item.fixture), file);
      const original = await readFile(file);

      const wrapped = await cli(['wrap', '--client', item.client, ...(item.extra ?? [])]);
      expect(wrapped.err).toBe('');
      expect(wrapped.code).toBe(0);
      const configPath = join(dirname(file), 'toolfence.json');
      const config = JSON.parse(await readFile(configPath, 'utf8'));
      expect(config.mcpServers).toEqual(
        JSON.parse(JSON.stringify(item.expected).replaceAll('<folder>', folder)),
      );

      // The client file now lists only the gateway, and everything else in it is kept.
      const text = await readFile(file, 'utf8');
      const listed = item.listed(text);
      const gatewayEntry = listed.toolfence as { command: string; args: string[] };
      // The running CLI by absolute path (node and its script): it runs without PATH.
      expect(gatewayEntry.command).toBe(process.execPath);
      expect(gatewayEntry.args).toEqual([CLI_SCRIPT, 'serve', '--config', configPath]);
      expect(Object.keys(listed).sort()).toEqual(
        item.client === 'codex' ? ['old', 'toolfence'] : ['toolfence'],
      );
      if (item.client === 'vscode') {
        expect(text).toContain('// Inputs are prompted once and stored securely by VS Code.');
        expect(json(text).inputs).toHaveLength(1);
        expect(gatewayEntry).toMatchObject({
          type: 'stdio',
          env: { TOOLFENCE_INPUT_PERPLEXITY_KEY: `\${input:perplexity-key}` },
        });
      }
      if (item.client === 'codex') {
        const toml = parseToml(text) as Record<string, Record<string, unknown>>;
        expect(toml.model).toBe('gpt-5-codex');
        expect(toml.profiles).toEqual({ fast: { model: 'gpt-5-mini' } });
        expect(toml.sandbox_workspace_write).toEqual({ network_access: false });
        expect(listed.toolfence).toMatchObject({
          env_vars: ['CONTEXT7_API_KEY', 'FIGMA_OAUTH_TOKEN'],
        });
        expect(wrapped.out).toContain('docs.startup_timeout_sec');
        expect(text).toContain('# Codex settings');
      }
      if (item.fixture === 'claude.user.json') {
        const document = json(text);
        expect(document.numStartups).toBe(42);
        expect(document.mcpServers.memory.command).toBe('npx');
      }

      // The moved servers are a valid gateway config once their variables are set.
      const env = new Proxy({} as Record<string, string>, { get: () => 'value' });
      expect(() => parseGatewayConfig(config, env)).not.toThrow();

      // A second wrap is refused; unwrap puts the exact bytes back.
      expect((await cli(['wrap', '--client', item.client, ...(item.extra ?? [])])).code).toBe(1);
      const unwrap = await cli([
        'unwrap',
        '--client',
        item.client,
        ...(item.extra ?? []).slice(0, 2),
      ]);
      expect(unwrap.err).toBe('');
      expect(unwrap.code).toBe(0);
      expect((await readFile(file)).equals(original)).toBe(true);
      await expect(readFile(`${file}.toolfence-backup`)).rejects.toThrow();

      // wrap -> unwrap -> wrap: toolfence.json already holds these very servers, which is fine.
      const again = await cli(['wrap', '--client', item.client, ...(item.extra ?? [])]);
      expect(again.err).toBe('');
      expect(again.code).toBe(0);
      expect(JSON.parse(await readFile(configPath, 'utf8'))).toEqual(config);
      expect(
        (await cli(['unwrap', '--client', item.client, ...(item.extra ?? []).slice(0, 2)])).code,
      ).toBe(0);
      expect((await readFile(file)).equals(original)).toBe(true);
    },
    60_000,
  );

  it('unwrap --force restores the backup whole even when the file changed since wrap', async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    const original = await readFile(file);
    expect((await cli(['wrap', '--client', 'claude'])).code).toBe(0);
    await writeFile(file, `${await readFile(file, 'utf8')} `);
    expect((await cli(['unwrap', '--client', 'claude', '--force'])).code).toBe(0);
    expect((await readFile(file)).equals(original)).toBe(true);
  });

  it("unwrap of a ~/.claude.json Claude Code rewrote since puts back only the moved servers and keeps Claude's state", async () => {
    const file = join(folder, 'home/.claude.json');
    await mkdir(dirname(file), { recursive: true });
    await copyFile(join(FIXTURES, 'claude.user.json'), file);
    const extra = ['--file', 'home/.claude.json', '--project', '/home/dev/app'];
    expect((await cli(['wrap', '--client', 'claude', ...extra])).code).toBe(0);
    // Claude Code rewrites the whole file on every start: new counters, a new project, its own
    // formatting.
    const rewritten = json(await readFile(file, 'utf8'));
    rewritten.numStartups = 43;
    rewritten.projects['/home/dev/other'] = { allowedTools: ['Bash'] };
    rewritten.mcpServers.added = { command: 'added-server' };
    await writeFile(file, JSON.stringify(rewritten));
    const unwrap = await cli(['unwrap', '--client', 'claude', '--file', 'home/.claude.json']);
    expect(unwrap.err).toBe('');
    expect(unwrap.code).toBe(0);
    const restored = json(await readFile(file, 'utf8'));
    const expected = { ...rewritten, projects: { ...rewritten.projects } };
    expected.projects['/home/dev/app'] = json(
      await readFile(join(FIXTURES, 'claude.user.json'), 'utf8'),
    ).projects['/home/dev/app'];
    expect(restored).toEqual(expected);
    await expect(readFile(`${file}.toolfence-backup`)).rejects.toThrow();
  });

  it('unwrap of a Codex file changed since wrap puts back only the moved tables', async () => {
    const file = join(folder, 'home/.codex/config.toml');
    await mkdir(dirname(file), { recursive: true });
    await copyFile(join(FIXTURES, 'codex.config.toml'), file);
    expect((await cli(['wrap', '--client', 'codex'])).code).toBe(0);
    const changed = (await readFile(file, 'utf8')).replace(
      'model = "gpt-5-codex"',
      'model = "gpt-5.1-codex"',
    );
    await writeFile(file, `${changed}\n[mcp_servers.later]\ncommand = "later"\n`);
    const unwrap = await cli(['unwrap', '--client', 'codex']);
    expect(unwrap.err).toBe('');
    expect(unwrap.code).toBe(0);
    const restored = parseToml(await readFile(file, 'utf8')) as Record<string, unknown>;
    const original = parseToml(
      await readFile(join(FIXTURES, 'codex.config.toml'), 'utf8'),
    ) as Record<string, Record<string, unknown>>;
    expect(restored.model).toBe('gpt-5.1-codex');
    expect(restored.mcp_servers).toEqual({
      ...original.mcp_servers,
      later: { command: 'later' },
    });
  });

  it("refuses to unwrap a changed file without wrap's record of what it moved, and changes nothing", async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    expect((await cli(['wrap', '--client', 'claude', '--no-check'])).code).toBe(0);
    await rm(`${file}.toolfence-wrap.json`);
    const changed = `${await readFile(file, 'utf8')} `;
    await writeFile(file, changed);
    const refused = await cli(['unwrap', '--client', 'claude']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/changed since wrap .*--force restores the backup whole/);
    expect(await readFile(file, 'utf8')).toBe(changed);
  });

  it('refuses to unwrap over a moved server listed again with another entry, and changes nothing', async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    expect((await cli(['wrap', '--client', 'claude'])).code).toBe(0);
    const document = json(await readFile(file, 'utf8'));
    document.mcpServers.github = { command: 'another-github' };
    const changed = JSON.stringify(document);
    await writeFile(file, changed);
    const refused = await cli(['unwrap', '--client', 'claude']);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('WRAP_UNWRAP_CONFLICT');
    expect(refused.err).toContain('"github"');
    expect(await readFile(file, 'utf8')).toBe(changed);
  });

  it('refuses a server name already in toolfence.json and leaves every file as it was', async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    const existing = JSON.stringify({ mcpServers: { github: { command: 'x' } } });
    await writeFile(join(folder, 'toolfence.json'), existing);
    const result = await cli(['wrap', '--client', 'claude']);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/already has a server named "github"/);
    expect(await readFile(join(folder, 'toolfence.json'), 'utf8')).toBe(existing);
    expect(await readFile(file, 'utf8')).toBe(
      await readFile(join(FIXTURES, 'claude.mcp.json'), 'utf8'),
    );
    await expect(readFile(`${file}.toolfence-backup`)).rejects.toThrow();
  });

  it('merges into an existing toolfence.json only with --merge, and says which settings it keeps', async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    await writeFile(
      join(folder, 'toolfence.json'),
      JSON.stringify({ mcpServers: { mine: { command: 'x' } }, gateway: { auditMaxBytes: 4096 } }),
    );
    const result = await cli(['wrap', '--client', 'claude', '--merge']);
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      'kept from the existing config: mcpServers.mine, gateway.auditMaxBytes',
    );
    const config = JSON.parse(await readFile(join(folder, 'toolfence.json'), 'utf8'));
    expect(Object.keys(config.mcpServers)).toEqual(['mine', 'github', 'filesystem']);
    expect(config.gateway).toEqual({ auditMaxBytes: 4096 });
  });
});

/* biome-ignore-start lint/suspicious/noTemplateCurlyInString: the client variable syntax under test */
describe('importing client formats', () => {
  it.each([
    [
      'claude',
      'an SSE server',
      '{"mcpServers":{"a":{"type":"sse","url":"https://x.test/sse"}}}',
      /SSE-only/,
    ],
    [
      'claude',
      'an unknown key',
      '{"mcpServers":{"a":{"command":"x","cwd":"/"}}}',
      /"cwd" is not supported/,
    ],
    [
      'claude',
      'a Cursor-style variable',
      '{"mcpServers":{"a":{"command":"${env:X}"}}}',
      /Claude Code variables/,
    ],
    [
      'claude',
      'comments (Claude Code reads strict JSON)',
      '{ // c\n"mcpServers":{}}',
      /not valid JSON \(line 1\)/,
    ],
    ['claude', 'servers not an object', '{"mcpServers":[]}', /must be an object of servers/],
    [
      'claude',
      'a name the gateway cannot use',
      '{"mcpServers":{"a__b":{"command":"x"}}}',
      /rename it first/,
    ],
    [
      'claude',
      'a name ending with "_" (serve would refuse it)',
      '{"mcpServers":{"a_":{"command":"x"}}}',
      /no "_" at the end; rename it first/,
    ],
    [
      'claude',
      'a name with a terminal escape, shown escaped',
      '{"mcpServers":{"a\\u001b[2Jb":{"command":"x"}}}',
      /mcpServers\."a\\u001b\[2Jb": the gateway needs server names/,
    ],
    [
      'cursor',
      'an envFile',
      '{"mcpServers":{"a":{"command":"x","envFile":".env"}}}',
      /"envFile" is not supported/,
    ],
    [
      'cursor',
      'an unknown editor variable',
      '{"mcpServers":{"a":{"command":"${config:x}"}}}',
      /cannot be resolved/,
    ],
    [
      'cursor',
      'an input (VS Code only)',
      '{"mcpServers":{"a":{"command":"${input:x}"}}}',
      /cannot be resolved/,
    ],
    [
      'vscode',
      'an undeclared input',
      '{"servers":{"a":{"command":"${input:k}"}}}',
      /not declared in "inputs"/,
    ],
    [
      'vscode',
      'a server without command or url',
      '{"servers":{"a":{"type":"stdio"}}}',
      /needs "command"/,
    ],
    ['vscode', 'broken JSONC', '{"servers":{"a": }', /not valid JSON with comments/],
    ['codex', 'broken TOML', '[mcp_servers.a\ncommand = 1', /not valid TOML/],
    ['codex', 'a cwd', '[mcp_servers.a]\ncommand = "x"\ncwd = "/"', /"cwd" is not supported/],
    [
      'codex',
      'a ${} the gateway would expand',
      '[mcp_servers.a]\ncommand = "${HOME}/x"',
      /Codex does not expand/,
    ],
    [
      'codex',
      'a bad env_vars name',
      '[mcp_servers.a]\ncommand = "x"\nenv_vars = ["A-B"]',
      /environment variable name/,
    ],
    [
      'codex',
      'headers on a command server',
      '[mcp_servers.a]\ncommand = "x"\nbearer_token_env_var = "T"',
      /url servers only/,
    ],
  ] as const)('refuses %s: %s', (client, _label, text, message) => {
    expect(() =>
      importClientServers(client, text, 'file', { home: '/h', workspace: '/w' }),
    ).toThrow(message);
  });

  it('refuses to rewrite a Codex file whose servers are inline tables, with a clear line', async () => {
    const file = join(folder, 'config.toml');
    await writeFile(file, 'mcp_servers = { a = { command = "x" } }\n');
    const result = await cli(['wrap', '--client', 'codex', '--file', file]);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/\[mcp_servers\.<name>\] tables/);
  });
});
/* biome-ignore-end lint/suspicious/noTemplateCurlyInString: the client variable syntax under test */

/* biome-ignore-start lint/suspicious/noTemplateCurlyInString: the client variable syntax under test */
interface Attack {
  readonly name: string;
  readonly client: ClientKind;
  readonly place: string;
  readonly text: string;
  readonly code: string;
  readonly message: RegExp;
}

const VSCODE_INPUTS = (ids: string[]) =>
  ids.map((id) => ({ type: 'promptString', id, description: id, password: true }));

const attacks: Attack[] = [
  {
    name: 'two VS Code inputs differing in "-" and "_" (api-key, api_key)',
    client: 'vscode',
    place: '.vscode/mcp.json',
    text: JSON.stringify({
      inputs: VSCODE_INPUTS(['api-key', 'api_key']),
      servers: {
        a: { command: 'a', env: { KEY: '${input:api-key}' } },
        b: { command: 'b', env: { KEY: '${input:api_key}' } },
      },
    }),
    code: 'WRAP_INPUT_COLLISION',
    message: /"api-key" and "api_key" would both reach the gateway as TOOLFENCE_INPUT_API_KEY/,
  },
  {
    name: 'two VS Code inputs differing in case (Token, token)',
    client: 'vscode',
    place: '.vscode/mcp.json',
    text: JSON.stringify({
      inputs: VSCODE_INPUTS(['Token', 'token']),
      servers: { a: { command: 'a', args: ['${input:Token}', '${input:token}'] } },
    }),
    code: 'WRAP_INPUT_COLLISION',
    message: /TOOLFENCE_INPUT_TOKEN/,
  },
  {
    name: 'two VS Code inputs differing in "." and "-" (gh.token, gh-token)',
    client: 'vscode',
    place: '.vscode/mcp.json',
    text: JSON.stringify({
      inputs: VSCODE_INPUTS(['gh.token', 'gh-token']),
      servers: {
        a: { url: 'https://a.example/mcp', headers: { Authorization: '${input:gh.token}' } },
        b: { url: 'https://b.example/mcp', headers: { Authorization: '${input:gh-token}' } },
      },
    }),
    code: 'WRAP_INPUT_COLLISION',
    message: /TOOLFENCE_INPUT_GH_TOKEN/,
  },
  {
    name: 'an input whose variable another server reads from the environment',
    client: 'vscode',
    place: '.vscode/mcp.json',
    text: JSON.stringify({
      inputs: VSCODE_INPUTS(['api-key']),
      servers: {
        a: { command: 'a', env: { KEY: '${env:TOOLFENCE_INPUT_API_KEY}' } },
        b: { command: 'b', env: { KEY: '${input:api-key}' } },
      },
    }),
    code: 'WRAP_INPUT_COLLISION',
    message: /TOOLFENCE_INPUT_API_KEY/,
  },
  {
    name: 'a Claude Code server named "__proto__"',
    client: 'claude',
    place: '.mcp.json',
    text: '{"mcpServers":{"ok":{"command":"ok"},"__proto__":{"command":"hidden"}}}',
    code: 'WRAP_PROTO_KEY',
    message: /"__proto__" \(line 1\)/,
  },
  {
    name: 'a Cursor env key named "__proto__"',
    client: 'cursor',
    place: '.cursor/mcp.json',
    text: '{"mcpServers":{"a":{"command":"a",\n"env":{"__proto__":{"X":"1"}}}}}',
    code: 'WRAP_PROTO_KEY',
    message: /line 2/,
  },
  {
    name: 'a VS Code server named "__proto__"',
    client: 'vscode',
    place: '.vscode/mcp.json',
    text: '{"servers":{"__proto__":{"command":"hidden"}}}',
    code: 'WRAP_PROTO_KEY',
    message: /__proto__/,
  },
  {
    name: 'a Codex server named "__proto__"',
    client: 'codex',
    place: 'home/.codex/config.toml',
    text: '[mcp_servers.ok]\ncommand = "ok"\n\n[mcp_servers.__proto__]\ncommand = "hidden"\n',
    code: 'GATEWAY_CONFIG',
    message: /mcp_servers\."__proto__": the gateway needs server names/,
  },
];
/* biome-ignore-end lint/suspicious/noTemplateCurlyInString: the client variable syntax under test */

describe('wrap held against adversarial client files (issue 35 item 5)', {
  timeout: 60_000,
}, () => {
  it.each(attacks)('refuses $name, and writes nothing', async (attack) => {
    const file = join(folder, attack.place);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, attack.text);
    const result = await cli(['wrap', '--client', attack.client, '--no-check']);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`(${attack.code})`);
    expect(result.err).toMatch(attack.message);
    expect(await readFile(file, 'utf8')).toBe(attack.text);
    await expect(readFile(`${file}.toolfence-backup`)).rejects.toThrow();
    await expect(readFile(join(dirname(file), 'toolfence.json'))).rejects.toThrow();
  });

  it.each([
    ['observe: true', { observe: true }, /gateway\.observe is true: nothing is enforced/],
    [
      'audit: /dev/null',
      { audit: '/dev/null' },
      /gateway\.audit is \/dev\/null, not a regular file/,
    ],
    [
      'a Redis budget that allows calls when Redis is down',
      { budget: { url: 'redis://127.0.0.1:6379', onUnavailable: 'allow' } },
      /onUnavailable is "allow"/,
    ],
  ] as const)(
    'refuses to merge silently into a toolfence.json with %s; with --merge it warns',
    async (_label, gateway, warning) => {
      const file = join(folder, '.mcp.json');
      await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
      const configPath = join(folder, 'toolfence.json');
      const existing = JSON.stringify({ mcpServers: {}, gateway });
      await writeFile(configPath, existing);
      const refused = await cli(['wrap', '--client', 'claude', '--no-check']);
      expect(refused.code).toBe(1);
      expect(refused.err).toContain('(WRAP_CONFIG_EXISTS)');
      expect(refused.err).toContain('--merge');
      expect(await readFile(configPath, 'utf8')).toBe(existing);
      await expect(readFile(`${file}.toolfence-backup`)).rejects.toThrow();

      const merged = await cli(['wrap', '--client', 'claude', '--no-check', '--merge']);
      expect(merged.code).toBe(0);
      expect(merged.err).toMatch(/warning: .*toolfence\.json keeps /);
      expect(merged.err).toMatch(warning);
    },
  );

  it.each([
    ['claude', '.mcp.json', 'claude.mcp.json'],
    ['codex', 'home/.codex/config.toml', 'codex.config.toml'],
  ] as const)(
    'writes through a symlinked %s file and keeps the link',
    async (client, place, fixture) => {
      const target = join(folder, 'dotfiles', 'client-config');
      await mkdir(dirname(target), { recursive: true });
      await copyFile(join(FIXTURES, fixture), target);
      const original = await readFile(target);
      const link = join(folder, place);
      await mkdir(dirname(link), { recursive: true });
      await symlink(target, link);
      const wrapped = await cli(['wrap', '--client', client, '--no-check']);
      expect(wrapped.err).toBe('');
      expect(wrapped.code).toBe(0);
      expect((await lstat(link)).isSymbolicLink()).toBe(true);
      expect(await readlink(link)).toBe(target);
      expect(await readFile(target, 'utf8')).toContain('toolfence');
      expect((await cli(['unwrap', '--client', client])).code).toBe(0);
      expect((await lstat(link)).isSymbolicLink()).toBe(true);
      expect((await readFile(target)).equals(original)).toBe(true);
    },
  );

  it('refuses a dangling symlinked client file rather than replacing the link', async () => {
    const link = join(folder, '.mcp.json');
    await symlink(join(folder, 'missing.json'), link);
    const result = await cli(['wrap', '--client', 'claude', '--no-check']);
    expect(result.code).toBe(1);
    expect((await lstat(link)).isSymbolicLink()).toBe(true);
  });

  it('touches only the lines it changes in a Codex file with mixed line endings', async () => {
    const file = join(folder, 'home/.codex/config.toml');
    await mkdir(dirname(file), { recursive: true });
    const kept = [
      '# Codex settings\r\n',
      'model = "gpt-5-codex"\n',
      '\r\n',
      '[profiles.fast]\r\n',
      'model = "gpt-5-mini"\n',
      '\n',
    ];
    const moved = ['[mcp_servers.docs]\n', 'command = "npx"\r\n', '\n'];
    const after = ['[sandbox_workspace_write]\n', 'network_access = false\r\n'];
    await writeFile(file, [...kept, ...moved, ...after].join(''));
    const result = await cli(['wrap', '--client', 'codex', '--no-check']);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const text = await readFile(file, 'utf8');
    expect(text.startsWith([...kept, ...after].join(''))).toBe(true);
    const added = text.slice([...kept, ...after].join('').length);
    expect(added).toMatch(/^\r\n\[mcp_servers\.toolfence\]\r\n/);
    expect(parseToml(text)).toMatchObject({ model: 'gpt-5-codex', mcp_servers: { toolfence: {} } });
  });
});

describe('wrap writes what runs (issue 36)', { timeout: 60_000 }, () => {
  async function wrapClaude(args: string[]) {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    const result = await cli(['wrap', '--client', 'claude', ...args]);
    const entry =
      result.code === 0
        ? (json(await readFile(file, 'utf8')).mcpServers.toolfence as {
            command: string;
            args: string[];
          })
        : undefined;
    return { ...result, entry, file };
  }

  it('carries disabled over and leaves out the keys clients write that the gateway does not apply', async () => {
    const file = join(folder, '.cursor/mcp.json');
    await mkdir(dirname(file), { recursive: true });
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: {
          on: { command: 'on', timeout: 60, autoApprove: ['read'], description: 'd' },
          off: { command: 'off', disabled: true, alwaysAllow: ['*'] },
        },
      }),
    );
    const result = await cli(['wrap', '--client', 'cursor', '--no-check']);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out).toContain(
      "not carried over (the gateway's own limits and policy apply): on.timeout, on.autoApprove, on.description, off.alwaysAllow",
    );
    const config = JSON.parse(await readFile(join(dirname(file), 'toolfence.json'), 'utf8'));
    expect(config.mcpServers).toEqual({
      on: { command: 'on' },
      off: { command: 'off', disabled: true },
    });
    expect(Object.keys(parseGatewayConfig(config).mcpServers)).toEqual(['on']);
  });

  it('writes a gateway entry that a client starts without PATH and lists the moved tools', async () => {
    const file = join(folder, '.mcp.json');
    const toolkit = fileURLToPath(
      new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url),
    );
    await writeFile(
      file,
      JSON.stringify({
        mcpServers: {
          toolkit: {
            command: process.execPath,
            args: [toolkit],
            env: { CALLS_FILE: join(folder, 'calls.jsonl') },
          },
        },
      }),
    );
    const wrapped = await cli(['wrap', '--client', 'claude']);
    expect(wrapped.err).toBe('');
    expect(wrapped.code).toBe(0);
    const entry = json(await readFile(file, 'utf8')).mcpServers.toolfence;
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    // What the client does: spawn the entry as written, here with no PATH at all.
    const transport = new StdioClientTransport({
      command: entry.command,
      args: entry.args,
      env: {},
      stderr: 'pipe',
    });
    const client = new Client({ name: 'wrap-client', version: '1.0.0' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('toolkit__note');
    } finally {
      await client.close();
    }
  });

  it('--command npx writes the package bin through npx, split into command and args', async () => {
    const result = await wrapClaude(['--command', 'npx', '--no-check']);
    expect(result.code).toBe(0);
    expect(result.entry).toEqual({
      command: 'npx',
      args: [
        '-y',
        '-p',
        '@toolfence/mcp-bridge',
        'toolfence-mcp',
        'serve',
        '--config',
        join(folder, 'toolfence.json'),
      ],
    });
  });

  it('splits a multi-word --command into the executable and its arguments, and checks it starts', async () => {
    const result = await wrapClaude(['--command', `"${process.execPath}" ${CLI_SCRIPT}`]);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.entry?.command).toBe(process.execPath);
    expect(result.entry?.args.slice(0, 2)).toEqual([CLI_SCRIPT, 'serve']);
  });

  it.each([
    [
      'a command that does not exist',
      ['--command', join(tmpdir(), 'toolfence-no-such-command')],
      /could not be started \(ENOENT\)/,
    ],
    [
      'a command that exits non-zero',
      [
        '--command',
        `${process.execPath} ${fileURLToPath(new URL('./fixtures/exit-three.mjs', import.meta.url))}`,
      ],
      /exited with code 3/,
    ],
  ])('refuses %s and writes nothing', async (_label, args, message) => {
    const result = await wrapClaude(args);
    expect(result.code).toBe(1);
    expect(result.err).toContain('(WRAP_COMMAND_FAILED)');
    expect(result.err).toMatch(message);
    expect(await readFile(result.file, 'utf8')).toBe(
      await readFile(join(FIXTURES, 'claude.mcp.json'), 'utf8'),
    );
    await expect(readFile(join(folder, 'toolfence.json'))).rejects.toThrow();
  });

  it('bounds the start check by --check-timeout-ms', async () => {
    const hang = join(folder, 'hang.mjs');
    await writeFile(hang, 'setInterval(() => {}, 1000);\n');
    const result = await wrapClaude([
      '--command',
      `${process.execPath} ${hang}`,
      '--check-timeout-ms',
      '300',
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/no answer within 300 ms/);
  });

  it('writes --policy after checking the policy file', async () => {
    const policy = join(folder, 'policy.json');
    await writeFile(policy, JSON.stringify({ kind: 'rules', rules: [], default: 'ask' }));
    const result = await wrapClaude(['--policy', 'policy.json', '--no-check']);
    expect(result.code).toBe(0);
    expect(result.entry?.args.slice(-2)).toEqual(['--policy', policy]);

    await rm(`${result.file}.toolfence-backup`);
    await writeFile(policy, '{"kind":"nope"}');
    const refused = await wrapClaude(['--policy', policy, '--no-check']);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('(POLICY_FILE_INVALID)');
    expect(refused.err).toContain(policy);
  });
});
