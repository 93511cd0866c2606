import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export type Handler = (request: IncomingMessage, response: ServerResponse) => void;

export interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingMessage['headers'];
  readonly body: string;
  readonly servername?: string | false;
}

export interface LoopbackServer {
  readonly server: Server | HttpsServer;
  readonly port: number;
  readonly origin: string;
  readonly seen: Seen[];
  connections: number;
  close(): Promise<void>;
}

function wrap(handler: Handler, seen: Seen[]): Handler {
  return (request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const socket = request.socket as { servername?: string | false };
      seen.push({
        method: request.method ?? '',
        url: request.url ?? '',
        headers: request.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        ...(socket.servername === undefined ? {} : { servername: socket.servername }),
      });
      handler(request, response);
    });
  };
}

async function listen(
  server: Server | HttpsServer,
  scheme: string,
  seen: Seen[],
  host = '127.0.0.1',
): Promise<LoopbackServer> {
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  const result: LoopbackServer = {
    server,
    port,
    origin: `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    seen,
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', () => {
    result.connections += 1;
  });
  return result;
}

/** An HTTP server on 127.0.0.1:0 (or the given loopback host). */
export function startHttpServer(handler: Handler, host?: string): Promise<LoopbackServer> {
  const seen: Seen[] = [];
  return listen(createServer(wrap(handler, seen)), 'http', seen, host);
}

export interface TestCertificate {
  readonly key: string;
  readonly cert: string;
}

/** A self-signed certificate for `pinned.test` (made with the openssl CLI). */
export function makeCertificate(names: readonly string[] = ['pinned.test']): TestCertificate {
  const folder = mkdtempSync(join(tmpdir(), 'toolfence-cert-'));
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
        `/CN=${names[0]}`,
        '-addext',
        `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}`,
        '-keyout',
        join(folder, 'key.pem'),
        '-out',
        join(folder, 'cert.pem'),
      ],
      { stdio: 'ignore' },
    );
    return {
      key: readFileSync(join(folder, 'key.pem'), 'utf8'),
      cert: readFileSync(join(folder, 'cert.pem'), 'utf8'),
    };
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

/** An HTTPS server on 127.0.0.1:0 presenting the certificate. */
export function startHttpsServer(
  certificate: TestCertificate,
  handler: Handler,
): Promise<LoopbackServer> {
  const seen: Seen[] = [];
  return listen(createTlsServer(certificate, wrap(handler, seen)), 'https', seen);
}
