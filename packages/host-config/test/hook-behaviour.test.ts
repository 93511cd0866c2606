import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_CONFIG_FILENAME, HOOK_SCRIPT_FILENAME, MAX_BYTES } from '../src/index.js';
import { fileUrl, HOOK_PATH, runHook, stdinFor, stdinShapes } from './support/run-hook.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-hook-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('hook script behaviour', () => {
  it('writes a 25 MiB attachment (about 34 MB of JSON) in full before exiting', async () => {
    const bytes = randomBytes(MAX_BYTES);
    const file = join(dir, 'big.bin');
    await writeFile(file, bytes);
    const result = await runHook(stdinFor('codex', { attachments: [{ source: fileUrl(file) }] }), {
      timeoutMs: 30000,
    });
    expect(result.code).toBe(0);
    expect(result.stdout.length).toBeGreaterThan(34_000_000);
    const output = JSON.parse(result.stdout);
    const source: string = output.hookSpecificOutput.updatedInput.attachments[0].source;
    expect(source.startsWith('data:application/octet-stream;base64,')).toBe(true);
    expect(Buffer.from(source.slice(source.indexOf(',') + 1), 'base64').equals(bytes)).toBe(true);
  }, 30000);

  // Node before 20.16 (and 18) has no process.getBuiltinModule: the hook imports its built-ins.
  it('works without process.getBuiltinModule, as on Node 18', async () => {
    const bytes = randomBytes(1024);
    const file = join(dir, 'old-node.bin');
    await writeFile(file, bytes);
    const withoutBuiltins = ['--import', 'data:text/javascript,delete process.getBuiltinModule'];
    const probe = spawnSync(
      process.execPath,
      [...withoutBuiltins, '-e', 'process.stdout.write(typeof process.getBuiltinModule)'],
      { encoding: 'utf8' },
    );
    expect(probe.stdout).toBe('undefined');
    const result = await runHook(stdinFor('codex', { attachments: [{ source: fileUrl(file) }] }), {
      nodeArgs: withoutBuiltins,
      env: { TOOLFENCE_HOOK_ALLOWED_ROOTS: dir },
    });
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    const source: string = JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachments[0]
      .source;
    expect(Buffer.from(source.slice(source.indexOf(',') + 1), 'base64').equals(bytes)).toBe(true);
  });

  it('lets stdout drain to a slow reader before exiting', async () => {
    const bytes = randomBytes(4 * 1024 * 1024);
    const file = join(dir, 'slow.bin');
    await writeFile(file, bytes);
    const child = spawn(process.execPath, [HOOK_PATH], { stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    let paused = false;
    child.stdout.on('data', (chunk: Buffer) => {
      out.push(chunk);
      if (!paused) {
        paused = true;
        child.stdout.pause();
        setTimeout(() => child.stdout.resume(), 500);
      }
    });
    const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
    child.stdin.end(stdinFor('vscode', { attachment: { source: fileUrl(file) } }));
    expect(await closed).toBe(0);
    const output = JSON.parse(Buffer.concat(out).toString('utf8'));
    const source: string = output.hookSpecificOutput.updatedInput.attachment.source;
    expect(Buffer.from(source.slice(source.indexOf(',') + 1), 'base64').equals(bytes)).toBe(true);
  });

  it('denies a file one byte over MAX_BYTES by default', async () => {
    const file = join(dir, 'over.bin');
    await writeFile(file, Buffer.alloc(MAX_BYTES + 1));
    const result = await runHook(
      stdinFor('claude-code', { attachment: { source: fileUrl(file) } }),
    );
    expect(JSON.parse(result.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
      'HOOK_FILE_TOO_LARGE',
    );
  });

  it('reads the allowlist from the config file next to the script', async () => {
    const home = join(dir, 'install');
    await mkdir(join(home, 'allowed'), { recursive: true });
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(
      join(home, HOOK_CONFIG_FILENAME),
      JSON.stringify({ allowedRoots: [join(home, 'allowed')], maxBytes: 100 }),
    );
    await writeFile(join(home, 'allowed', 'ok.txt'), 'ok');
    await writeFile(join(home, 'denied.txt'), 'no');
    const script = join(home, HOOK_SCRIPT_FILENAME);
    const allowed = await runHook(
      stdinFor('vscode', { attachment: { source: fileUrl(join(home, 'allowed', 'ok.txt')) } }),
      { script },
    );
    expect(JSON.parse(allowed.stdout).hookSpecificOutput.updatedInput.attachment.source).toBe(
      'data:text/plain;base64,b2s=',
    );
    const denied = await runHook(
      stdinFor('vscode', { attachment: { source: fileUrl(join(home, 'denied.txt')) } }),
      { script },
    );
    expect(JSON.parse(denied.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
      'HOOK_PATH_NOT_ALLOWED',
    );
  });

  it.each([
    ['an unknown key', '{"allowedRoot": ["/tmp"]}'],
    ['a boolean limit', '{"maxBytes": true}'],
    ['broken JSON', '{"allowedRoots": ['],
    ['a list instead of an object', '[]'],
    ['maxDepth as a string', '{"maxDepth": "10"}'],
    ['maxDepth over its ceiling', '{"maxDepth": 1001}'],
    ['settleMs negative', '{"settleMs": -1}'],
    ['toolkitBudgets as a list', '{"toolkitBudgets": [1]}'],
    ['a toolkit budget of zero', '{"toolkitBudgets": {"files": 0}}'],
    ['a toolkit name with a space', '{"toolkitBudgets": {"my files": 10}}'],
  ])('fails closed on a config file with %s', async (_name, text) => {
    const home = await mkdtemp(join(dir, 'config-'));
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(join(home, HOOK_CONFIG_FILENAME), text);
    await writeFile(join(home, 'a.txt'), 'a');
    const result = await runHook(
      stdinFor('cursor', { attachment: { source: fileUrl(join(home, 'a.txt')) } }),
      { script: join(home, HOOK_SCRIPT_FILENAME) },
    );
    const output = JSON.parse(result.stdout);
    expect(output.permission).toBe('deny');
    expect(output.user_message).toContain('HOOK_CONFIG_INVALID');
  });

  it.each([
    [
      'maxDepth',
      '{"maxDepth": 2}',
      { attachment: { source: '' }, nested: { deeper: {} } },
      'HOOK_INPUT_TOO_DEEP',
    ],
    [
      'toolkitBudgets',
      '{"toolkitBudgets": {"files": 1}}',
      { attachment: { source: '' } },
      'HOOK_TOOLKIT_BUDGET_EXCEEDED',
    ],
  ])('enforces %s from the config file', async (_name, text, input, code) => {
    const home = await mkdtemp(join(dir, 'config-'));
    await copyFile(HOOK_PATH, join(home, HOOK_SCRIPT_FILENAME));
    await writeFile(join(home, HOOK_CONFIG_FILENAME), text);
    await writeFile(join(home, 'a.txt'), 'ab');
    const withSource = { ...input, attachment: { source: fileUrl(join(home, 'a.txt')) } };
    // The Claude Code event names the tool mcp__files__upload: the "files" budget applies.
    const result = await runHook(stdinFor('claude-code', withSource), {
      script: join(home, HOOK_SCRIPT_FILENAME),
    });
    expect(JSON.parse(result.stdout).hookSpecificOutput.permissionDecisionReason).toContain(
      `: ${code}: `,
    );
  });

  it.each([
    ['photo', Buffer.from('89504e470d0a1a0a0000', 'hex'), 'image/png'],
    ['scan', Buffer.from('ffd8ffe000104a464946', 'hex'), 'image/jpeg'],
    ['anim', Buffer.from('GIF89a....'), 'image/gif'],
    ['doc', Buffer.from('%PDF-1.4 ...'), 'application/pdf'],
    ['archive', Buffer.from('504b0304140000000800', 'hex'), 'application/zip'],
    ['blob', Buffer.from('0001020304', 'hex'), 'application/octet-stream'],
    ['notes.md', Buffer.from('# title'), 'text/markdown'],
    [
      'SHEET.XLSX',
      Buffer.from('504b0304', 'hex'),
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
    ],
  ])('detects the MIME type of %s', async (name, content, mime) => {
    await writeFile(join(dir, name), content);
    const result = await runHook(
      stdinFor('claude-code', { attachment: { source: fileUrl(join(dir, name)) } }),
    );
    const attachment = JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachment;
    expect(attachment.mime_type).toBe(mime);
    expect(attachment.source.startsWith(`data:${mime};base64,`)).toBe(true);
  });

  it('does nothing for empty stdin', async () => {
    const result = await runHook('');
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  it('does nothing for a hook event it does not know', async () => {
    const result = await runHook(
      JSON.stringify({ event: 'x', tool_input: { attachment: { source: 'file:///etc/hosts' } } }),
    );
    expect(result).toEqual({ code: 0, stdout: '', stderr: '' });
  });

  // Windows has no FIFOs or /bin/sh.
  it.skipIf(process.platform === 'win32')(
    'reads stdin that is non-blocking and arrives late (EAGAIN fallback)',
    async () => {
      const fifo = join(dir, 'stdin-fifo');
      spawnSync('mkfifo', [fifo]);
      await writeFile(join(dir, 'late.txt'), 'late');
      const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      const writer = openSync(fifo, constants.O_WRONLY);
      // libuv makes a child's fds 0-2 blocking, so hand the non-blocking FIFO over as fd 3 and let
      // sh move it to fd 0 (what a client that is not built on libuv may do).
      const child = spawn(
        '/bin/sh',
        ['-c', 'exec "$0" "$1" 0<&3 3<&-', process.execPath, HOOK_PATH],
        {
          stdio: ['ignore', 'pipe', 'pipe', reader],
        },
      );
      closeSync(reader);
      const out: Buffer[] = [];
      child.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
      const closed = new Promise<number | null>((resolve) => child.on('close', resolve));
      await new Promise((resolve) => setTimeout(resolve, 300));
      writeSync(
        writer,
        stdinFor('claude-code', { attachment: { source: fileUrl(join(dir, 'late.txt')) } }),
      );
      closeSync(writer);
      expect(await closed).toBe(0);
      const output = JSON.parse(Buffer.concat(out).toString('utf8'));
      expect(output.hookSpecificOutput.updatedInput.attachment.source).toBe(
        'data:text/plain;base64,bGF0ZQ==',
      );
    },
  );

  // Windows has no FIFOs or /bin/sh.
  it.skipIf(process.platform === 'win32')(
    "still answers Cursor's {} when stdout is a full non-blocking pipe (EAGAIN fallback)",
    async () => {
      const fifo = join(dir, 'stdout-fifo');
      spawnSync('mkfifo', [fifo]);
      const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
      const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
      // Fill the pipe, so the hook's first write finds it full.
      const fill = Buffer.alloc(4096, 0x2e);
      let filled = 0;
      for (;;) {
        try {
          filled += writeSync(writer, fill);
        } catch {
          break;
        }
      }
      const child = spawn(
        '/bin/sh',
        ['-c', 'exec "$0" "$1" 1>&3 3>&-', process.execPath, HOOK_PATH],
        { stdio: ['pipe', 'ignore', 'pipe', writer] },
      );
      closeSync(writer);
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      child.stdin?.end(stdinFor('cursor', { note: 'no attachment here' }));
      // Drain only once the hook has exited or had time to find the pipe full: a hook that gave
      // up on EAGAIN has exited by then without its answer.
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 1500))]);
      const drain = spawn('cat', [], { stdio: [reader, 'pipe', 'ignore'] });
      closeSync(reader);
      const out: Buffer[] = [];
      drain.stdout?.on('data', (chunk: Buffer) => out.push(chunk));
      const drained = new Promise((resolve) => drain.on('close', resolve));
      expect(await exited).toBe(0);
      await drained;
      const text = Buffer.concat(out).toString('latin1');
      expect(text.length).toBe(filled + 2);
      expect(text.endsWith('.{}')).toBe(true);
    },
  );

  // What makes the no-attachment path as cheap as `node -e 0`: it loads no module that Node's
  // own start-up of a CommonJS file does not load (no ESM loader, no stream for stdin or stdout).
  it.each(
    (Object.keys(stdinShapes) as (keyof typeof stdinShapes)[]).flatMap((client) => [
      { client, kind: 'an event without the word', input: { command: 'npm test' } },
      {
        client,
        kind: 'an attachment that is not a file',
        input: { attachment: { source: 'https://example.com/a.pdf' } },
      },
    ]),
  )('loads no module beyond an empty CommonJS file: $client, $kind', async ({ client, input }) => {
    const preload = join(dir, 'record-modules.cjs');
    await writeFile(
      preload,
      "process.on('exit', () => require('node:fs').writeSync(2, JSON.stringify(process.moduleLoadList)));\n",
    );
    const empty = join(dir, 'empty.cjs');
    await writeFile(empty, '');
    const stdin = stdinFor(client, input);
    const options = { nodeArgs: ['--require', preload] };
    const baseline = new Set(
      JSON.parse((await runHook(stdin, { ...options, script: empty })).stderr),
    );
    const result = await runHook(stdin, options);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(client === 'cursor' ? '{}' : '');
    const extra = (JSON.parse(result.stderr) as string[]).filter((name) => !baseline.has(name));
    expect(extra).toEqual([]);
  });
});
