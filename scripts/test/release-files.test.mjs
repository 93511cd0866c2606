// What a release ships: the documented pack command packs the four published packages only
// (the examples are private), and each tarball carries the MIT license, the root LICENSE word
// for word. The full package checks (publint, attw, smoke consumers) are a step of `pnpm check`.
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = resolve(import.meta.dirname, '..', '..');
const destination = mkdtempSync(join(tmpdir(), 'toolfence-pack-'));
const LICENSE = readFileSync(join(REPO, 'LICENSE'), 'utf8');

afterAll(() => rmSync(destination, { recursive: true, force: true }));

describe('the release files', () => {
  it('the root LICENSE is the MIT license of the toolfence contributors, as every package declares', () => {
    expect(LICENSE).toMatch(/^MIT License\n\nCopyright \(c\) \d{4} toolfence contributors\n/);
    for (const name of readdirSync(join(REPO, 'packages'))) {
      const manifest = JSON.parse(
        readFileSync(join(REPO, 'packages', name, 'package.json'), 'utf8'),
      );
      expect(manifest.license, name).toBe('MIT');
      expect(readFileSync(join(REPO, 'packages', name, 'LICENSE'), 'utf8'), name).toBe(LICENSE);
    }
  });

  it('pnpm pack:packages packs the four published packages, each with the LICENSE', () => {
    const result = spawnSync(
      'npx',
      ['-y', 'pnpm@12.4.2', 'run', 'pack:packages', '--pack-destination', destination],
      { cwd: REPO, encoding: 'utf8', timeout: 120_000 },
    );
    expect(result.status, `${result.stdout}\n${result.stderr}`).toBe(0);
    const files = readdirSync(destination).sort();
    expect(files.map((file) => file.replace(/-\d+\.\d+\.\d+\.tgz$/, ''))).toEqual([
      'toolfence-host-config',
      'toolfence-mcp-bridge',
      'toolfence-tool-contract',
      'toolfence-tools',
    ]);
    for (const file of files) {
      const shipped = execFileSync('tar', ['-xOzf', join(destination, file), 'package/LICENSE'], {
        encoding: 'utf8',
      });
      expect(shipped, file).toBe(LICENSE);
    }
  });
});
