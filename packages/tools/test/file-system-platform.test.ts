import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Runs the built package in a bubblewrap sandbox whose /proc is an empty tmpfs: the platform
// statement says FileSystemTool refuses to construct there unless the host opts into by-path.
const DIST = new URL('../dist/index.js', import.meta.url).href;
let base: string;
let lines: Record<string, unknown>;

const SCRIPT = `
import { FileSystemTool } from ${JSON.stringify(DIST)};
const root = process.argv[2];
const context = { runId: 'platform', metadata: {}, accessScope: 'full' };
const out = {};
out.procVisible = (await import('node:fs')).existsSync('/proc/self/fd');
try {
  new FileSystemTool({ root });
  out.descriptor = 'constructed';
} catch (error) {
  out.descriptor = { code: error.code, option: error.details?.option, message: error.message };
}
const tool = new FileSystemTool({ root, confinement: 'by-path', allowWrite: true });
const call = async (args) => {
  const result = await tool.invoke(args, context);
  return result.isError ? result.metadata.code : result.structuredContent;
};
out.write = await call({ operation: 'write', path: 'dir/new.txt', content: 'fresh' });
out.read = await call({ operation: 'read', path: './dir//new.txt' });
out.writeRoot = await call({ operation: 'write', path: 'top.txt', content: 'top' });
out.mkdir = await call({ operation: 'mkdir', path: 'made' });
out.delete = await call({ operation: 'delete', path: 'made' });
out.link = await call({ operation: 'read', path: 'link/secret.txt' });
out.escape = await call({ operation: 'read', path: '../outside/secret.txt' });
await tool.close();
console.log(JSON.stringify(out));
`;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fs-platform-'));
  const root = join(base, 'root');
  mkdirSync(join(root, 'dir'), { recursive: true });
  mkdirSync(join(base, 'outside'));
  writeFileSync(join(base, 'outside', 'secret.txt'), 'OUTSIDE');
  symlinkSync('../outside', join(root, 'link'));
  const script = join(base, 'probe.mjs');
  writeFileSync(script, SCRIPT);
  const output = execFileSync(
    'bwrap',
    [
      '--ro-bind',
      '/',
      '/',
      '--dev',
      '/dev',
      '--tmpfs',
      '/proc',
      '--bind',
      base,
      base,
      '--',
      process.execPath,
      script,
      root,
    ],
    { encoding: 'utf8', timeout: 30_000 },
  );
  lines = JSON.parse(output.trim().split('\n').at(-1) as string) as Record<string, unknown>;
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

describe('FileSystemTool without /proc/self/fd', () => {
  it('refuses to construct in descriptor confinement and names the opt-in', () => {
    expect(lines.procVisible).toBe(false);
    expect(lines.descriptor).toMatchObject({ code: 'FS_INVALID_OPTIONS', option: 'confinement' });
    expect((lines.descriptor as { message: string }).message).toContain("confinement: 'by-path'");
  });

  it("works in the documented weaker 'by-path' mode, with the same path rules", () => {
    expect(lines.write).toMatchObject({ path: 'dir/new.txt', created: true });
    expect(lines.read).toMatchObject({ content: 'fresh' });
    expect(lines.writeRoot).toMatchObject({ path: 'top.txt' });
    expect(lines.mkdir).toEqual({ path: 'made' });
    expect(lines.delete).toMatchObject({ path: 'made' });
    expect(lines.link).toBe('FS_SYMLINK_REFUSED');
    expect(lines.escape).toBe('FS_PATH_INVALID');
    expect(existsSync(join(base, 'root', 'dir', 'new.txt'))).toBe(true);
  });
});
