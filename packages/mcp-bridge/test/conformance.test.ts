import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const RUN = join(PACKAGE_DIR, 'conformance', 'run.mjs');
const COMMAND = 'node conformance/client.mjs';
const BASELINE = 'conformance/expected-failures.yml';

function conformance(args: readonly string[]): Promise<{ status: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUN, 'client', '--command', COMMAND, ...args], {
      cwd: PACKAGE_DIR,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('close', (status) => resolve({ status: status ?? 1, output }));
  });
}

describe('MCP conformance suite (0.1.16) against a client built on McpClient', () => {
  it('passes every client scenario except the listed auth baseline', {
    timeout: 240_000,
  }, async () => {
    expect(existsSync(join(PACKAGE_DIR, 'dist', 'index.js'))).toBe(true);
    const suite = await conformance(['--suite', 'all', '--expected-failures', BASELINE]);
    if (suite.status === 0) return;
    // Scenarios run in parallel; on a loaded machine a timing scenario (sse-retry) can miss its
    // window. Every unexpected failure must then pass when run alone.
    const expected = new Set(
      [...readFileSync(join(PACKAGE_DIR, BASELINE), 'utf8').matchAll(/^\s+- (\S+)$/gm)].map(
        (match) => match[1] as string,
      ),
    );
    const failed = [...suite.output.matchAll(/✗ ([\w./-]+):/g)]
      .map((match) => match[1] as string)
      .filter((scenario) => !expected.has(scenario));
    // A non-zero exit that names no failed scenario (a crash, a harness error) is a failure too.
    expect(failed.length, suite.output.slice(-3000)).toBeGreaterThan(0);
    const stale = /stale|now pass/i.test(suite.output);
    expect(stale, suite.output.slice(-3000)).toBe(false);
    const unexpected: string[] = [];
    for (const scenario of failed) {
      const alone = await conformance(['--scenario', scenario, '--expected-failures', BASELINE]);
      if (alone.status !== 0) unexpected.push(scenario);
    }
    expect(unexpected, suite.output.slice(-3000)).toEqual([]);
  });
});
