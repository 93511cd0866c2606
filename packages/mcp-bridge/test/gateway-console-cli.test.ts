// `toolfence-mcp serve --console` (issue 40): the stdio gateway's console on its own loopback port
// with a sign-in URL printed once, the refusal of an address off loopback, the console at /console
// of an --http listener, and a gateway started without --console loads no console module and
// serves no console route.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stopProcess } from './fixtures/teardown.js';
import { rawRequest, TOOLKIT } from './support/console-harness.js';

const MAIN = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const RECORD = fileURLToPath(new URL('./fixtures/record-loads.mjs', import.meta.url));

let folder: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-console-cli-'));
  await writeFile(
    join(folder, 'toolfence.json'),
    JSON.stringify({
      mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
    }),
  );
});
afterEach(async () => {
  // Each gateway has exited before its folder goes: one still shutting down writes into it.
  await Promise.all(
    children.splice(0).map((child) => {
      child.stdin?.end();
      return stopProcess(child);
    }),
  );
  await rm(folder, { recursive: true, force: true });
});

/** Starts `serve` with `args`; resolves with the stderr seen once `pattern` appears in it. */
function serve(
  args: string[],
  pattern: RegExp,
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; err: string; match: RegExpExecArray }> {
  const loads = join(folder, 'loads.txt');
  const child = spawn(
    process.execPath,
    ['--import', RECORD, MAIN, 'serve', '--config', join(folder, 'toolfence.json'), ...args],
    {
      cwd: folder,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        TOOLFENCE_LOADS_FILE: loads,
        TOOLFENCE_LOADS_MATCH: '/gateway/console/',
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  children.push(child);
  return new Promise((resolve, reject) => {
    let err = '';
    const timer = setTimeout(() => reject(new Error(`no ${pattern} in: ${err}`)), 30_000);
    child.stderr?.on('data', (chunk: Buffer) => {
      err += chunk.toString();
      const match = pattern.exec(err);
      if (match !== null) {
        clearTimeout(timer);
        resolve({ child, err, match });
      }
    });
    child.once('exit', () => {
      clearTimeout(timer);
      const match = pattern.exec(err);
      if (match !== null) resolve({ child, err, match });
      else reject(new Error(`exited without ${pattern}: ${err}`));
    });
  });
}

const consoleLoads = async (): Promise<string[]> =>
  (await readFile(join(folder, 'loads.txt'), 'utf8').catch(() => '')).split('\n').filter(Boolean);

describe('serve --console', () => {
  it('serves a stdio gateway’s console on its own loopback port; the printed link signs in once it is used', async () => {
    const { match } = await serve(
      ['--console'],
      /console: (http:\/\/127\.0\.0\.1:\d+\/console)\/login\?token=([\w-]+)[\s\S]*toolkit: ready/,
    );
    const [, base, token] = match as unknown as [string, string, string];
    const login = await rawRequest(`${base}/login?token=${token}`);
    expect(login.status).toBe(303);
    const cookie = String(login.headers['set-cookie']).split(';')[0] as string;
    const page = await rawRequest(`${base}/upstreams`, { headers: { cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain('toolkit');
    expect(page.body).not.toContain(token);
    expect(await consoleLoads()).not.toEqual([]);
  }, 60_000);

  it.each<{ name: string; args: string[] }>([
    { name: 'a console on every address', args: ['--console', '0.0.0.0:0'] },
    { name: 'a console on a LAN address', args: ['--console', '192.0.2.10:0'] },
  ])(
    'refuses $name unless --console-allow-remote is given',
    async ({ args }) => {
      const { child, err } = await serve(args, /not loopback/);
      const code = await new Promise<number | null>((resolve) => {
        if (child.exitCode !== null) resolve(child.exitCode);
        else child.once('exit', (exit) => resolve(exit));
      });
      expect(code).toBe(2);
      expect(err).toContain('--console-allow-remote');
    },
    60_000,
  );

  it('mounts the console at /console of the --http listener', async () => {
    const { match } = await serve(
      ['--http', '127.0.0.1:0', '--console'],
      /console: (http:\/\/127\.0\.0\.1:\d+\/console)\/login\?token=([\w-]+)/,
    );
    const [, base, token] = match as unknown as [string, string, string];
    const login = await rawRequest(`${base}/login?token=${token}`);
    expect(login.status).toBe(303);
  }, 60_000);
});

describe('serve --http --console with a bearer token', () => {
  it('signs in with the gateway’s bearer token and never prints it', async () => {
    const token = 'a-bearer-token-for-the-gateway-0123456789';
    const { err, match } = await serve(
      ['--http', '127.0.0.1:0', '--console'],
      /console: (http:\/\/127\.0\.0\.1:\d+\/console)\/ \(sign in with the gateway's bearer token\)/,
      { TOOLFENCE_GATEWAY_TOKEN: token },
    );
    expect(err).not.toContain(token);
    const base = match[1] as string;
    expect((await rawRequest(`${base}/login?token=not-the-bearer-token`)).status).toBe(403);
    expect((await rawRequest(`${base}/login?token=${token}`)).status).toBe(303);
  }, 60_000);
});

describe('a gateway without --console', () => {
  it('loads no console module (stdio)', async () => {
    const { child } = await serve([], /toolkit: ready/);
    child.stdin?.end();
    await new Promise((resolve) => child.once('exit', resolve));
    expect(await consoleLoads()).toEqual([]);
  }, 60_000);

  it('serves no console route and loads no console module (--http)', async () => {
    const { match } = await serve(
      ['--http', '127.0.0.1:0'],
      /listening on (http:\/\/[\d.:]+)\/mcp/,
    );
    const base = match[1] as string;
    await new Promise((resolve) => setTimeout(resolve, 200));
    for (const path of ['/console', '/console/login', '/console/approvals']) {
      expect((await rawRequest(`${base}${path}`)).status).toBe(404);
    }
    expect(await consoleLoads()).toEqual([]);
  }, 60_000);
});

describe('serve --http --console with gateway.httpAuth', () => {
  /** A loopback authorization server publishing its metadata only. */
  async function metadataServer(): Promise<{ issuer: string; close: () => Promise<void> }> {
    const { createServer } = await import('node:http');
    let issuer = '';
    const server = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          issuer,
          authorization_endpoint: `${issuer}/auth`,
          token_endpoint: `${issuer}/token`,
          jwks_uri: `${issuer}/jwks`,
          code_challenge_methods_supported: ['S256'],
          response_types_supported: ['code'],
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    issuer = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    return {
      issuer,
      close: () => new Promise<void>((resolve) => server.close(() => resolve())),
    };
  }

  async function writeConfig(issuer: string, consoleSettings: Record<string, unknown>) {
    await writeFile(
      join(folder, 'toolfence.json'),
      JSON.stringify({
        mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
        gateway: {
          httpAuth: {
            resource: 'http://127.0.0.1:1/mcp',
            authorizationServers: [issuer],
            console: consoleSettings,
          },
        },
      }),
    );
  }

  it('signs in with the identity provider: no token sign-in, the start sends the browser there with PKCE S256', async () => {
    const as = await metadataServer();
    try {
      await writeConfig(as.issuer, { admins: { subjects: ['alice'] } });
      const { match } = await serve(
        ['--http', '127.0.0.1:0', '--console'],
        /console: (http:\/\/127\.0\.0\.1:\d+\/console)\/ \(sign in with the identity provider/,
      );
      const url = match[1] as string;
      const page = await rawRequest(`${url}/login?token=anything-at-all-0123456789`);
      expect(page.status).toBe(200);
      expect(page.body).toContain('Sign in with the identity provider');
      expect(page.headers['set-cookie']).toBeUndefined();
      const start = await rawRequest(`${url}/login/start`);
      expect(start.status).toBe(303);
      const location = new URL(String(start.headers.location));
      expect(location.origin + location.pathname).toBe(`${as.issuer}/auth`);
      expect(Object.fromEntries(location.searchParams)).toMatchObject({
        response_type: 'code',
        client_id: 'toolfence-console',
        redirect_uri: `${url}/callback`,
        code_challenge_method: 'S256',
        resource: 'http://127.0.0.1:1/mcp',
      });
    } finally {
      await as.close();
    }
  }, 60_000);

  it('refuses an unknown key in gateway.httpAuth.console before starting', async () => {
    await writeConfig('http://127.0.0.1:9', { admin: { subjects: ['alice'] } });
    const { err } = await serve(['--http', '127.0.0.1:0', '--console'], /unknown key "admin"/);
    expect(err).toContain('gateway.httpAuth.console');
  }, 60_000);
});
