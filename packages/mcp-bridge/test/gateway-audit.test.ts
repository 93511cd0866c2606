import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { type Authorizer, RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';
import { AuditLog, type AuditLogOptions } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway, type McpGatewayOptions } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { gatewayClient, resultText as text } from './helpers.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const policy = () =>
  new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } });
const ASK: Authorizer = { authorize: () => ({ verdict: 'ask', reason: 'test' }) };

let folder: string;
let callsFile: string;
let logPath: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-audit-'));
  callsFile = join(folder, 'calls.jsonl');
  logPath = join(folder, 'audit.jsonl');
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

const toolkit = (env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [TOOLKIT],
  env: { CALLS_FILE: callsFile, ...env },
  namespace: 'tk',
});

function gatewayFor(
  options: {
    env?: Record<string, string>;
    audit?: AuditLogOptions;
    authorizer?: Authorizer;
  } & Partial<Pick<McpGatewayOptions, 'approvalMaxArgumentChars'>> = {},
  pins?: PinStore,
) {
  return async () => {
    const gateway = new McpGateway({
      config: parseGatewayConfig({ mcpServers: { toolkit: toolkit(options.env) } }, {}),
      authorizer: options.authorizer ?? policy(),
      pins: pins ?? (await PinStore.open(join(folder, 'toolfence.lock.json'))),
      audit: new AuditLog(logPath, 1024 * 1024, options.audit ?? {}),
      ...(options.approvalMaxArgumentChars === undefined
        ? {}
        : { approvalMaxArgumentChars: options.approvalMaxArgumentChars }),
    });
    open.push(gateway);
    return gateway;
  };
}

async function started(options: Parameters<typeof gatewayFor>[0] = {}) {
  const gateway = await gatewayFor(options)();
  await gateway.start();
  return gateway;
}

const downstream = (gateway: McpGateway, answer?: (message: string) => boolean) =>
  gatewayClient(gateway, open, answer);

async function serverCalls(): Promise<{ name: string; args: { id?: string } }[]> {
  return (await readFile(callsFile, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

async function auditLines(): Promise<Record<string, unknown>[]> {
  return (await readFile(logPath, 'utf8').catch(() => ''))
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

const io = (env: Record<string, string> = {}) => {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out,
    err,
    io: {
      out: (chunk: string) => out.push(chunk),
      err: (chunk: string) => err.push(chunk),
      env,
      cwd: folder,
    },
  };
};

describe('no line on disk, no call', () => {
  // Each row: what happens to the log while the gateway runs. The next call is refused before it
  // reaches the server, the client is told why, and so is every call after it.
  it.each<{ name: string; during: () => Promise<void> }>([
    { name: 'the log deleted', during: () => unlink(logPath) },
    {
      name: 'a folder put at the path',
      during: async () => {
        await unlink(logPath);
        await mkdir(logPath);
      },
    },
    {
      name: 'a corrupt last line appended',
      during: () => writeFile(logPath, '{"half', { flag: 'a' }),
    },
    {
      name: 'the last lines cut',
      during: async () => {
        const all = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
        await writeFile(logPath, `${all.slice(0, 1).join('\n')}\n`);
      },
    },
  ])(
    '$name while the gateway runs: the call is refused and the server never sees it',
    async ({ during }) => {
      const gateway = await started();
      const client = await downstream(gateway);
      expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
        'note a',
      );
      await during();
      for (const id of ['b', 'c']) {
        const refused = await client.callTool({ name: 'tk__note', arguments: { id } });
        expect(refused.isError).toBe(true);
        expect(text(refused)).toMatch(
          /did not run: the gateway could not write it to its audit log \(AUDIT_WRITE_FAILED\).*toolfence-mcp audit verify/,
        );
      }
      expect((await serverCalls()).map((call) => call.args.id)).toEqual(['a']);
    },
    30_000,
  );

  // Each row: what was done to the files while the gateway was stopped. The gateway does not
  // start (no upstream is spawned) and says what to run and how to start a new chain.
  it.each<{ name: string; attack: () => Promise<void>; reason: string }>([
    {
      name: 'the last lines cut',
      attack: async () => {
        const all = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
        await writeFile(logPath, `${all.slice(0, -1).join('\n')}\n`);
      },
      reason: 'cut',
    },
    { name: 'the log deleted', attack: () => unlink(logPath), reason: 'log-missing' },
    {
      name: 'a corrupt last line',
      attack: () => writeFile(logPath, '{"half\n', { flag: 'a' }),
      reason: 'not-json',
    },
    {
      name: 'a folder at the path',
      attack: async () => {
        await unlink(logPath);
        await mkdir(logPath);
      },
      reason: 'log-missing',
    },
    { name: 'the head deleted', attack: () => unlink(`${logPath}.head`), reason: 'head-missing' },
  ])(
    '$name while stopped: a restarted gateway refuses to start',
    async ({ attack, reason }) => {
      const first = await started();
      const client = await downstream(first);
      await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
      await client.callTool({ name: 'tk__note', arguments: { id: 'b' } });
      await first.close();
      await attack();
      const second = await gatewayFor()();
      await expect(second.start()).rejects.toMatchObject({
        code: 'AUDIT_LOG_BROKEN',
        details: { reason },
        message: expect.stringMatching(/toolfence-mcp audit verify --log .*move .* aside/),
      });
      expect(second.openUpstreams).toBe(0);
    },
    30_000,
  );
});

describe('toolfence-mcp audit verify and serve', () => {
  async function writeConfig(gateway: Record<string, unknown> = {}) {
    const config = join(folder, 'toolfence.json');
    await writeFile(
      config,
      JSON.stringify({
        mcpServers: { toolkit: toolkit() },
        gateway: { audit: logPath, ...gateway },
      }),
    );
    return config;
  }

  it('verifies a log given by path alone, and fails after a cut', async () => {
    const gateway = await started();
    const client = await downstream(gateway);
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    await gateway.close();
    const ok = io();
    expect(await runCli(['audit', 'verify', '--log', logPath], ok.io)).toBe(0);
    expect(ok.out.join('')).toMatch(
      /^audit: 2 line\(s\), chain intact and sealed \(unkeyed\): 2 in .*audit\.jsonl\n$/,
    );
    const positional = io();
    expect(await runCli(['audit', 'verify', 'audit.jsonl'], positional.io)).toBe(0);
    const all = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
    await writeFile(logPath, `${all[0]}\n`);
    const cut = io();
    expect(await runCli(['audit', 'verify', '--log', logPath], cut.io)).toBe(1);
    expect(cut.out.join('')).toMatch(/BROKEN \(cut\).*1 line\(s\), but its head sealed 2/);
    expect(cut.out.join('')).toMatch(/move .* aside/);
  }, 30_000);

  it('fails when there is nothing to verify: no log, no .1 and no head', async () => {
    const none = io();
    expect(await runCli(['audit', 'verify', '--log', logPath], none.io)).toBe(1);
    expect(none.out.join('')).toMatch(/nothing to verify/);
  });

  it('prints help for audit --help and audit verify --help; a bare audit is a usage error', async () => {
    for (const argv of [
      ['audit', '--help'],
      ['audit', '-h'],
      ['audit', 'verify', '--help'],
    ]) {
      const help = io();
      expect(await runCli(argv, help.io)).toBe(0);
      expect(help.out.join('')).toMatch(/toolfence-mcp audit verify --log FILE/);
    }
    for (const argv of [['audit'], ['audit', 'verify'], ['audit', 'verify', '--nope']]) {
      const wrong = io();
      expect(await runCli(argv, wrong.io)).toBe(2);
      expect(wrong.err.join('')).toMatch(/toolfence-mcp audit --help/);
    }
  });

  it('keys the chain with TOOLFENCE_AUDIT_KEY: serve writes HMAC lines, verify needs the key', async () => {
    const key = randomBytes(32).toString('hex');
    const config = await writeConfig();
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const cli = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [cli, 'serve', '--config', config],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TOOLFENCE_AUDIT_KEY: key },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'stdio-client', version: '1.0.0' });
    await client.connect(transport);
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'k' } }))).toBe(
      'note k',
    );
    await client.close();
    expect((await auditLines()).map((line) => String(line.hash).split(':')[0])).toEqual([
      'hmac-sha256',
      'hmac-sha256',
    ]);
    const keyed = io({ TOOLFENCE_AUDIT_KEY: key });
    expect(await runCli(['audit', 'verify', '--log', logPath], keyed.io)).toBe(0);
    expect(keyed.out.join('')).toMatch(/keyed, key id [0-9a-f]{16}/);
    const viaConfig = io({ TOOLFENCE_AUDIT_KEY: key });
    expect(await runCli(['audit', 'verify', '--config', config], viaConfig.io)).toBe(0);
    const keyless = io();
    expect(await runCli(['audit', 'verify', '--log', logPath], keyless.io)).toBe(1);
    expect(keyless.out.join('')).toMatch(/BROKEN \(key-required\).*TOOLFENCE_AUDIT_KEY/);
    // A gateway without the key does not continue a keyed log.
    const serve = io();
    expect(await runCli(['serve', '--config', config], serve.io)).toBe(1);
    expect(serve.err.join('')).toMatch(/AUDIT_LOG_BROKEN/);
  }, 60_000);

  it('serve refuses to continue a cut log, naming audit verify and how to start a new chain', async () => {
    const gateway = await started();
    const client = await downstream(gateway);
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    await gateway.close();
    const all = (await readFile(logPath, 'utf8')).split('\n').filter(Boolean);
    await writeFile(logPath, `${all[0]}\n`);
    const config = await writeConfig();
    const serve = io();
    expect(await runCli(['serve', '--config', config], serve.io)).toBe(1);
    const said = serve.err.join('');
    expect(said).toMatch(/The audit log cannot be continued: .*lines were removed from its end/);
    expect(said).toMatch(/toolfence-mcp audit verify --log /);
    expect(said).toMatch(/move .*audit\.jsonl, .*audit\.jsonl\.1 and .*audit\.jsonl\.head aside/);
    expect(said).toMatch(/\(AUDIT_LOG_BROKEN\)/);
    expect(await serverCalls()).toHaveLength(1);
  }, 30_000);
});

describe('approval prompts', () => {
  const attacker = (length: number) => `${'x'.repeat(length)} to: attacker@evil.example`;

  // Each row: the arguments of an `ask`; the user is shown them whole, or not asked at all.
  it.each<{ name: string; id: string; limit?: number; asked: boolean }>([
    { name: 'a recipient after 2,000 characters', id: attacker(2_100), asked: true },
    { name: 'a recipient after 8,200 characters', id: attacker(8_200), asked: false },
    { name: 'a recipient past a limit of 100', id: attacker(100), limit: 100, asked: false },
    { name: 'short arguments under a limit of 100', id: 'short', limit: 100, asked: true },
  ])(
    '$name: shown whole, or refused without asking',
    async ({ id, limit, asked }) => {
      const gateway = await started(limit === undefined ? {} : { approvalMaxArgumentChars: limit });
      const prompts: string[] = [];
      const client = await downstream(gateway, (message) => {
        prompts.push(message);
        return true;
      });
      const result = await client.callTool({ name: 'tk__publish', arguments: { id } });
      if (asked) {
        expect(prompts).toHaveLength(1);
        expect(prompts[0]).toContain(JSON.stringify(id));
        expect(text(result)).toBe(`published ${id}`);
        return;
      }
      expect(prompts).toEqual([]);
      expect(result.isError).toBe(true);
      expect(text(result)).toMatch(
        new RegExp(
          `over the ${limit ?? 8192} an approval prompt shows whole \\(gateway\\.approvalMaxArgumentChars\\), so nobody was asked`,
        ),
      );
      expect(await serverCalls()).toEqual([]);
      expect((await auditLines()).at(-1)).toMatchObject({
        decision: 'ask',
        outcome: 'prompt-too-long',
      });
    },
    30_000,
  );

  it('escapes control and invisible characters in the description, the reason and the arguments', async () => {
    const gateway = await started({
      authorizer: { authorize: () => ({ verdict: 'ask', reason: 'rule\u001b[31m red' }) },
      env: { NOTE_DESCRIPTION: 'Reads a note.\u001b[2J\rApproved already\u202e\u200b\u0085\u009b' },
    });
    const prompts: string[] = [];
    const client = await downstream(gateway, (message) => {
      prompts.push(message);
      return false;
    });
    await client.callTool({ name: 'tk__note', arguments: { id: 'a\u001b]0;x\u0007\u2028b' } });
    expect(prompts).toHaveLength(1);
    const prompt = prompts[0] as string;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters under test
    expect(prompt).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200b\u202e\u2028]/);
    for (const shown of ['\\u{1b}[2J', '\\u{d}Approved', '\\u{202e}', '\\u{200b}', '\\u{85}']) {
      expect(prompt).toContain(shown);
    }
    expect(prompt).toContain('rule\\u{1b}[31m red');
    expect(prompt).toContain('\\u{2028}b');
  }, 30_000);
});

describe('a client that cannot be asked', () => {
  it('is told so and how to approve instead, and the audit says no-approval-channel', async () => {
    const gateway = await started({ authorizer: ASK });
    const client = await downstream(gateway);
    const result = await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    expect(result.isError).toBe(true);
    expect(text(result)).toMatch(
      /this client cannot ask the user \(it declared no form elicitation\), so it did not run and nobody was asked/,
    );
    expect(text(result)).toMatch(
      /use a client that supports elicitation, or allow this tool in the gateway's policy file/,
    );
    expect(text(result)).not.toMatch(/not approved by the user/);
    expect(await auditLines()).toMatchObject([{ decision: 'ask', outcome: 'no-approval-channel' }]);
    expect(await serverCalls()).toEqual([]);
  }, 30_000);
});
