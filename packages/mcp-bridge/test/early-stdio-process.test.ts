// A stdio server spawned before its transport (issue 41: `serve` spawns its upstreams before it
// loads the client): every byte it wrote before the transport took it arrives, in order; its exit
// before that is reported as the transport reports one; a process no transport takes is ended
// with its whole process group. Real processes; no timing is asserted.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_INHERITED_ENV,
  EarlyStdioProcess,
  stdioChildEnv,
} from '../src/transport/early-stdio-process.js';
import { RequestNotSentError } from '../src/transport/errors.js';
import { StdioTransport, withEarlyProcess } from '../src/transport/stdio-transport.js';
import { livingInGroup, until } from './support/process-group.js';

let folder: string;
beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-early-stdio-'));
});
afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

const env = (extra: Record<string, string> = {}) => stdioChildEnv(extra, DEFAULT_INHERITED_ENV);

/** Script text that writes a `notifications/message` record of `index:` and `bytes` x's to stdout. */
const notification = (index: number, bytes: number): string =>
  `process.stdout.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: '${index}:' + 'x'.repeat(${bytes}) } }) + '\\n');`;

/** Script text that starts a grandchild in the same process group; it writes its pid to `file`. */
const grandchild = (file: string): string =>
  `require('node:child_process').spawn(process.execPath, ['-e', ${JSON.stringify(`require('node:fs').writeFileSync(${JSON.stringify(file)}, String(process.pid)); setInterval(() => {}, 60000)`)}], { stdio: 'ignore' });`;

/** Collects what a transport delivers. */
function collect(transport: StdioTransport) {
  const messages: JSONRPCMessage[] = [];
  const errors: Error[] = [];
  const stderr: string[] = [];
  transport.onmessage = (message) => messages.push(message);
  transport.onerror = (error) => errors.push(error);
  return { messages, errors, stderr };
}

describe('EarlyStdioProcess taken by a StdioTransport', () => {
  it('delivers every stdout record and stderr line written before the transport took it, in order', async () => {
    const marker = join(folder, 'written');
    // 30 KB and 40 stderr lines before the marker (they fit the pipes), then 2 x 150 KB that
    // block until the transport reads.
    const script = `
      const fs = require('node:fs');
      ${notification(0, 30_000)}
      for (let i = 0; i < 40; i++) process.stderr.write('early line ' + i + '\\n');
      fs.writeFileSync(${JSON.stringify(marker)}, 'x');
      ${notification(1, 150_000)}
      ${notification(2, 150_000)}
      setInterval(() => {}, 60_000);`;
    const command = [process.execPath, '-e', script];
    const early = new EarlyStdioProcess(command, env(), undefined);
    await until(() => existsSync(marker), 'the server to write');
    const lines: string[] = [];
    const transport = withEarlyProcess(
      new StdioTransport({
        command,
        logger: { debug: (_message, details) => lines.push(String(details?.line)) },
      }),
      early,
    );
    const seen = collect(transport);
    await transport.start();
    expect(transport.pid).toBe(early.pid);
    await until(() => seen.messages.length === 3 && lines.length === 40, 'the records');
    expect(
      seen.messages.map((message) => {
        const data = (message as unknown as { params: { data: string } }).params.data;
        return [data.split(':')[0], data.length];
      }),
    ).toEqual([
      ['0', 30_002],
      ['1', 150_002],
      ['2', 150_002],
    ]);
    expect(lines).toEqual(Array.from({ length: 40 }, (_, index) => `early line ${index}`));
    expect(seen.errors).toEqual([]);
    await transport.close();
  }, 60_000);

  it.each([
    [
      'exited with a record and stderr left in its pipes',
      `${notification(7, 100_000)} process.stderr.write('it failed here\\n'); process.exit(3)`,
      1,
      'it failed here',
    ],
    ['exited without a byte', 'process.exit(3)', 0, undefined],
  ])(
    'reports a server that %s before it was taken as the transport does',
    async (_label, script, records, tail) => {
      const command = [process.execPath, '-e', script];
      const early = new EarlyStdioProcess(command, env(), undefined);
      await early.exited;
      const transport = withEarlyProcess(new StdioTransport({ command }), early);
      const seen = collect(transport);
      let closed = false;
      transport.onclose = () => {
        closed = true;
      };
      await transport.start();
      // Reported by the time start() resolves: a request written next is refused, naming why.
      expect(closed).toBe(true);
      const refused = await transport.send({ jsonrpc: '2.0', id: 1, method: 'ping' }).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(RequestNotSentError);
      expect((refused as Error).cause).toBe(transport.failure);
      expect(seen.messages).toHaveLength(records);
      expect(seen.errors).toHaveLength(1);
      expect(seen.errors[0]?.message).toContain('exited with code 3');
      expect((seen.errors[0] as { details?: Record<string, unknown> }).details).toMatchObject({
        exitCode: 3,
        ...(tail === undefined ? {} : { stderrTail: tail }),
      });
    },
    60_000,
  );

  it('refuses a command that is not found with the transport’s own error', async () => {
    const command = [join(folder, 'no-such-server')];
    const early = new EarlyStdioProcess(command, env(), undefined);
    const fromEarly = await withEarlyProcess(new StdioTransport({ command }), early)
      .start()
      .catch((error) => error);
    const own = await new StdioTransport({ command }).start().catch((error) => error);
    expect(fromEarly.code).toBe(own.code);
    expect(fromEarly.message).toBe(own.message);
    expect(fromEarly.details).toEqual({ command: 'no-such-server', errno: 'ENOENT' });
  }, 30_000);

  it('is ended, with its process group, when the transport runs another environment, and the transport spawns its own', async () => {
    const pidFile = join(folder, 'grandchild-env');
    const script = `${grandchild(pidFile)} setInterval(() => {}, 60_000);`;
    const command = [process.execPath, '-e', script];
    const early = new EarlyStdioProcess(command, env({ WHICH: 'early' }), undefined);
    await early.spawned;
    await until(() => existsSync(pidFile), 'the grandchild');
    const group = early.pid as number;
    const transport = withEarlyProcess(
      new StdioTransport({ command, env: { WHICH: 'own' }, killGraceMs: 500 }),
      early,
    );
    await transport.start();
    expect(transport.pid).not.toBe(group);
    let living = await livingInGroup(group);
    const deadline = Date.now() + 20_000;
    while (living > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      living = await livingInGroup(group);
    }
    expect(living).toBe(0);
    await transport.close();
  }, 60_000);

  it('dispose() ends a process no transport took, a grandchild in its group too; a later take gets nothing', async () => {
    const pidFile = join(folder, 'grandchild-dispose');
    const script = `${grandchild(pidFile)} process.on('SIGTERM', () => {}); setInterval(() => {}, 60_000);`;
    const early = new EarlyStdioProcess([process.execPath, '-e', script], env(), undefined);
    await until(() => existsSync(pidFile), 'the grandchild');
    const group = early.pid as number;
    expect(await livingInGroup(group)).toBe(2);
    // The server ignores SIGTERM: SIGKILL after the grace.
    await early.dispose(300);
    const deadline = Date.now() + 20_000;
    while ((await livingInGroup(group)) > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(await livingInGroup(group)).toBe(0);
    expect(Number(readFileSync(pidFile, 'utf8'))).toBeGreaterThan(0);
    const sink = {
      stdout() {},
      stdoutEnd() {},
      stderr() {},
      error() {},
      stdinError() {},
      close() {},
    };
    expect(early.take(sink)).toBeUndefined();
  }, 60_000);
});
