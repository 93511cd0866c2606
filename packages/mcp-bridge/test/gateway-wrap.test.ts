import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
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

describe('toolfence-mcp wrap and unwrap', () => {
  it.each(cases)('round-trips $client ($fixture) byte for byte', async (item) => {
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
    expect(gatewayEntry.command).toBe('toolfence-mcp');
    expect(gatewayEntry.args).toEqual(['serve', '--config', configPath]);
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
  });

  it('refuses to unwrap a file changed since wrap unless --force', async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    const original = await readFile(file);
    expect((await cli(['wrap', '--client', 'claude'])).code).toBe(0);
    await writeFile(file, `${await readFile(file, 'utf8')} `);
    const refused = await cli(['unwrap', '--client', 'claude']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/changed since wrap/);
    expect((await cli(['unwrap', '--client', 'claude', '--force'])).code).toBe(0);
    expect((await readFile(file)).equals(original)).toBe(true);
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

  it('merges into an existing toolfence.json and keeps its settings', async () => {
    const file = join(folder, '.mcp.json');
    await copyFile(join(FIXTURES, 'claude.mcp.json'), file);
    await writeFile(
      join(folder, 'toolfence.json'),
      JSON.stringify({ mcpServers: { mine: { command: 'x' } }, gateway: { observe: true } }),
    );
    expect((await cli(['wrap', '--client', 'claude'])).code).toBe(0);
    const config = JSON.parse(await readFile(join(folder, 'toolfence.json'), 'utf8'));
    expect(Object.keys(config.mcpServers)).toEqual(['mine', 'github', 'filesystem']);
    expect(config.gateway).toEqual({ observe: true });
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
