// The console behind a TLS-terminating reverse proxy (red-team, team features): what the README
// tells operators to do with --console-allow-remote. The real CLI gateway, a real Node HTTPS
// reverse proxy on loopback (a self-signed certificate for console.test made with openssl,
// forwarding the browser's Host), Debian's chromium driven by playwright-core, and for the
// identity-provider sign-in a real oidc-provider whose console client is registered with the
// https redirect URI only. With `--console-origin https://console.test:PORT` the sign-in form,
// the reload button and the provider's sign-in work through the proxy, cookies are Secure, and
// a POST from any other origin is still refused; a bad --console-origin is a usage error.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, request as httpRequest, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, type BrowserContext, chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type ServedHttp, startServeHttp } from './fixtures/serve-http.js';
import { freePort, listen, teamProviderConfig } from './fixtures/team-gateway.js';
import { closeServers, stopProcess } from './fixtures/teardown.js';
import { rawRequest, TOOLKIT } from './support/console-harness.js';

const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const TOKEN = 'a-shared-token-0123456789abcdef';
const CLIENT = 'toolfence-console';

let browser: Browser;
let folder: string;
let certificate: { key: string; cert: string };
const servers: Server[] = [];
const served: ServedHttp[] = [];
const contexts: BrowserContext[] = [];

/** A self-signed certificate for console.test (the openssl CLI). */
function makeCertificate(): { key: string; cert: string } {
  const dir = mkdtempSync(join(tmpdir(), 'toolfence-console-cert-'));
  try {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=console.test',
        '-addext',
        'subjectAltName=DNS:console.test',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A TLS-terminating reverse proxy on 127.0.0.1 (as nginx with `proxy_set_header Host
 * $http_host`): it forwards each request, headers and Host as the browser sent them, to the
 * loopback port `target()` names. Resolves with its port.
 */
async function tlsProxy(target: () => number): Promise<number> {
  const proxy = createTlsServer(certificate, (request, response) => {
    const upstream = httpRequest(
      {
        host: '127.0.0.1',
        port: target(),
        method: request.method,
        path: request.url,
        headers: request.headers,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    upstream.on('error', () => response.destroy());
    request.pipe(upstream);
  });
  servers.push(proxy as unknown as Server);
  return listen(proxy as unknown as Server);
}

beforeAll(async () => {
  certificate = makeCertificate();
  folder = await mkdtemp(join(tmpdir(), 'toolfence-console-tls-'));
  await config('plain', {});
  // Chromium resolves console.test to 127.0.0.1.
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: [
      '--host-resolver-rules=MAP console.test 127.0.0.1',
      ...(process.getuid?.() === 0 ? ['--no-sandbox'] : []),
    ],
  });
}, 60_000);
afterEach(async () => {
  for (const context of contexts.splice(0)) await context.close();
  for (const gateway of served.splice(0)) await stopProcess(gateway.child);
});
afterAll(async () => {
  await browser?.close();
  await closeServers(servers);
  await rm(folder, { recursive: true, force: true });
});

/** A browser context that reaches console.test (mapped to 127.0.0.1) and loopback only. */
async function browserContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  contexts.push(context);
  await context.route('**/*', (route) =>
    ['127.0.0.1', 'console.test'].includes(new URL(route.request().url()).hostname)
      ? route.continue()
      : route.abort(),
  );
  return context;
}

/** Writes a config; returns its path. */
async function config(name: string, gateway: Record<string, unknown>): Promise<string> {
  const path = join(folder, `${name}.json`);
  await writeFile(
    path,
    JSON.stringify({
      mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
      gateway: {
        ...gateway,
        audit: join(folder, `${name}-audit.jsonl`),
        pins: join(folder, `${name}.lock.json`),
      },
    }),
  );
  return path;
}

describe('the console behind a TLS proxy, with --console-origin', () => {
  it('signs in with the form, reloads from the page, sets Secure cookies; other origins are refused', async () => {
    let consolePort = 0;
    const proxyPort = await tlsProxy(() => consolePort);
    const origin = `https://console.test:${proxyPort}`;
    consolePort = await freePort();
    const gateway = await startServeHttp(
      [
        '--config',
        await config('token', { httpToken: TOKEN }),
        '--http',
        '127.0.0.1:0',
        '--console',
        `127.0.0.1:${consolePort}`,
        '--console-origin',
        origin,
      ],
      { until: /console:/ },
    );
    served.push(gateway);
    const context = await browserContext();
    const page = await context.newPage();
    // The sign-in form, as a person types the token: a POST with Origin https://console.test:PORT.
    await page.goto(`${origin}/console/login`);
    await page.locator('input[name=token]').fill(TOKEN);
    await page.locator('button[type=submit]').click();
    await page.waitForURL(`${origin}/console/approvals`);
    const cookies = await context.cookies(`${origin}/console/approvals`);
    const session = cookies.find((cookie) => cookie.name === `toolfence_console_${consolePort}`);
    expect(session).toMatchObject({ secure: true, httpOnly: true, sameSite: 'Strict' });
    // A change from the page: the reload button.
    await page.goto(`${origin}/console/upstreams`);
    await page.locator('form[action$="/upstreams/reload"] button').click();
    await page.waitForURL(/notice=reloaded/);
    // The same POST from any other origin (the http:// one included) is refused, as before.
    const csrf = await page.locator('input[name=csrf]').first().getAttribute('value');
    for (const other of [`http://console.test:${proxyPort}`, 'https://evil.test']) {
      const answer = await rawRequest(`http://127.0.0.1:${consolePort}/console/upstreams/reload`, {
        method: 'POST',
        headers: {
          host: `console.test:${proxyPort}`,
          origin: other,
          cookie: `${session?.name}=${session?.value}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: `csrf=${encodeURIComponent(csrf ?? '')}`,
      });
      expect(answer.status).toBe(403);
    }
    // The console's own loopback address still works as before (http, no Secure cookie).
    const direct = await rawRequest(`http://127.0.0.1:${consolePort}/console/login?token=${TOKEN}`);
    expect(direct.status).toBe(303);
    expect(String(direct.headers['set-cookie'])).not.toContain('Secure');
  }, 120_000);

  it('the identity-provider sign-in sends the https redirect_uri and completes through the proxy', async () => {
    let gatewayPort = 0;
    const proxyPort = await tlsProxy(() => gatewayPort);
    const origin = `https://console.test:${proxyPort}`;
    gatewayPort = await freePort();
    const resource = `http://127.0.0.1:${gatewayPort}/mcp`;
    // The provider knows only the https callback: an http:// redirect_uri is refused there.
    const { default: Provider } = (await import('oidc-provider')) as unknown as {
      default: new (issuer: string, config: Record<string, unknown>) => { callback(): never };
    };
    const idp = createServer();
    servers.push(idp);
    const issuer = `http://127.0.0.1:${await listen(idp)}`;
    const base = teamProviderConfig(
      resource,
      [],
      [
        {
          client_id: CLIENT,
          grant_types: ['authorization_code'],
          response_types: ['code'],
          redirect_uris: [`${origin}/console/callback`],
          token_endpoint_auth_method: 'none',
        },
      ],
    );
    const provider = new Provider(issuer, {
      ...base,
      features: { ...(base.features as object), devInteractions: { enabled: true } },
    });
    idp.on('request', provider.callback());
    const gateway = await startServeHttp(
      [
        '--config',
        await config('idp', {
          httpAuth: {
            resource,
            authorizationServers: [issuer],
            console: { clientId: CLIENT, scope: ['mcp:tools'], admins: { subjects: ['alice'] } },
          },
        }),
        '--http',
        `127.0.0.1:${gatewayPort}`,
        '--console',
        '--console-origin',
        origin,
      ],
      { until: /console:/ },
    );
    served.push(gateway);
    const start = await rawRequest(`http://127.0.0.1:${gatewayPort}/console/login/start`, {
      headers: { host: `console.test:${proxyPort}` },
    });
    expect(new URL(String(start.headers.location)).searchParams.get('redirect_uri')).toBe(
      `${origin}/console/callback`,
    );
    expect(String(start.headers['set-cookie'])).toContain('; Secure');
    const context = await browserContext();
    const page = await context.newPage();
    await page.goto(`${origin}/console/login`);
    await page.getByRole('link', { name: 'Sign in with the identity provider' }).click();
    await page.locator('input[name=login]').fill('alice');
    await page.locator('input[name=password]').fill('any-password');
    await page.getByRole('button', { name: 'Sign-in' }).click();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(`${origin}/console/approvals`);
    const cookies = await context.cookies(`${origin}/console/approvals`);
    expect(cookies.find((cookie) => cookie.name.startsWith('toolfence_console_'))).toMatchObject({
      secure: true,
    });
    await page.goto(`${origin}/console/upstreams`);
    await page.locator('form[action$="/upstreams/reload"] button').click();
    await page.waitForURL(/notice=reloaded/);
  }, 120_000);

  it.each([
    ['a path', 'https://console.test/console'],
    ['another scheme', 'ftp://console.test'],
    ['a user', 'https://admin@console.test'],
    ['a query', 'https://console.test/?a=1'],
    ['no host', 'https://'],
  ])('refuses a --console-origin with %s as a usage error (exit 2)', (_name, value) => {
    const run = spawnSync(
      process.execPath,
      [
        CLI,
        'serve',
        '--config',
        join(folder, 'plain.json'),
        '--http',
        '127.0.0.1:0',
        '--console',
        '--console-origin',
        value,
      ],
      { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin' }, timeout: 30_000 },
    );
    expect(run.status).toBe(2);
    expect(run.stderr).toContain('--console-origin takes the public origin');
    expect(run.stderr).not.toContain('admin@');
  });
});
