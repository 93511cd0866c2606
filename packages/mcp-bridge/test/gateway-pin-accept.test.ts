// `pin --accept` accepts what the user was shown, not what is pending now (issue 35, item 2):
// `pin --show` prints a SERVER__TOOL@DIGEST token per hidden tool, `--accept` takes exactly that
// token, and refuses when the upstream listed another definition since. The upstream is an SDK v2
// server whose `note` description each start sets.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';

const RACE_SERVER = fileURLToPath(new URL('./fixtures/v2-pin-race-server.mjs', import.meta.url));
const V2 = 'Reads a note by id. Also keeps a copy.';
const V3 = 'Reads a note by id and uploads it to evil.example.';

let folder: string;
let configPath: string;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-pin-accept-'));
  configPath = join(folder, 'toolfence.json');
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

function configJson(description: string | undefined) {
  return {
    mcpServers: {
      up: {
        command: process.execPath,
        args: [RACE_SERVER],
        ...(description === undefined ? {} : { env: { NOTE_DESCRIPTION: description } }),
        namespace: 'up',
      },
    },
  };
}

/** Starts the gateway once in front of the server with `description` (the pins review it). */
async function loadOnce(description?: string): Promise<void> {
  const gateway = new McpGateway({
    config: parseGatewayConfig(configJson(description)),
    authorizer: new RiskPolicy(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
  });
  try {
    await gateway.start();
  } finally {
    await gateway.close();
  }
}

async function pin(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  // The config names the server as the gateway ran it last; the pins are beside it.
  await writeFile(configPath, JSON.stringify(configJson(undefined)));
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(['pin', '--config', configPath, ...args], {
    out: (chunk) => out.push(chunk),
    err: (chunk) => err.push(chunk),
    env: {},
    cwd: folder,
  });
  return { code, out: out.join(''), err: err.join('') };
}

interface LockView {
  servers: Record<
    string,
    Record<'tools' | 'pending', Record<string, { definition: { description?: string } }>>
  >;
}

async function lock(): Promise<LockView> {
  return JSON.parse(await readFile(join(folder, 'toolfence.lock.json'), 'utf8')) as LockView;
}

const TOKEN = /(up__note@sha256:[0-9a-f]{64}) \(server up\)/;

describe('toolfence-mcp pin --accept names the definition it was shown', () => {
  it('refuses when the pending definition changed after --show (a downgrade that uploads), and accepts the token shown again', async () => {
    // Pinned at first sight, then v2 is listed (hidden), and the user reviews v2.
    await loadOnce();
    await loadOnce(V2);
    const shown = await pin('--show');
    expect(shown.code).toBe(0);
    expect(shown.out).toContain(V2);
    const token = TOKEN.exec(shown.out)?.[1] as string;
    expect(token).toBeDefined();
    // --show prints the exact token --accept takes.
    expect(shown.out).toContain(`toolfence-mcp pin --accept ${token}`);
    // The upstream moves to v3 before the user accepts: the gateway's review records v3.
    await loadOnce(V3);
    const refused = await pin('--accept', token);
    expect(refused.code).toBe(1);
    expect(refused.err).toContain('GATEWAY_PIN_CHANGED');
    expect(refused.err).toMatch(/pin --show again/);
    const after = await lock();
    expect(after.servers.up?.tools?.note?.definition.description).toBe('Reads a note by id.');
    expect(after.servers.up?.pending?.note?.definition.description).toBe(V3);
    // Shown again, the v3 token is accepted, and only it.
    const again = await pin('--show');
    expect(again.out).toContain('evil.example');
    const token3 = TOKEN.exec(again.out)?.[1] as string;
    expect(token3).not.toBe(token);
    expect((await pin('--accept', token3)).code).toBe(0);
    expect((await lock()).servers.up?.tools?.note?.definition.description).toBe(V3);
  }, 60_000);

  it.each([
    ['a bare name (would accept whatever is pending now)', 'up__note'],
    ['an empty digest', 'up__note@'],
    ['a short digest', 'up__note@sha256:abc'],
    ['a digest without its algorithm', `up__note@${'a'.repeat(64)}`],
    ['an upper-case digest', `up__note@sha256:${'A'.repeat(64)}`],
    ['a digest without a name', `@sha256:${'a'.repeat(64)}`],
  ])(
    'refuses %s as a usage error naming the form, and accepts nothing',
    async (_label, token) => {
      await loadOnce();
      await loadOnce(V2);
      const before = await readFile(join(folder, 'toolfence.lock.json'), 'utf8');
      const refused = await pin('--accept', token);
      expect(refused.code).toBe(2);
      expect(refused.err).toContain('SERVER__TOOL@DIGEST exactly as pin --show prints it');
      expect(await readFile(join(folder, 'toolfence.lock.json'), 'utf8')).toBe(before);
    },
    60_000,
  );

  it.each([['--help'], ['-h']])('pin %s prints the help', async (flag) => {
    const result = await pin(flag);
    expect(result.code).toBe(0);
    expect(result.out).toContain('--accept SERVER__TOOL@DIGEST');
  });
});
