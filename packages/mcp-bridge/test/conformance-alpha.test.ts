import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const RUN = join(PACKAGE_DIR, 'conformance', 'run-alpha.mjs');
const COMMAND = 'node conformance/client.mjs';
const BASELINE = 'conformance/expected-failures-alpha.yml';
const EXITS = 'conformance/expected-exits-alpha.yml';

function listed(file: string): Set<string> {
  return new Set(
    [...readFileSync(join(PACKAGE_DIR, file), 'utf8').matchAll(/^\s+- (\S+)$/gm)].map(
      (match) => match[1] as string,
    ),
  );
}

function conformance(
  args: readonly string[],
  exitLog: string,
): Promise<{ status: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [RUN, 'client', '--command', COMMAND, ...args], {
      cwd: PACKAGE_DIR,
      env: { ...process.env, CONFORMANCE_EXIT_LOG: exitLog },
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

/** The last exit code the conformance client recorded per scenario. */
function exits(exitLog: string): Map<string, number> {
  const codes = new Map<string, number>();
  if (!existsSync(exitLog)) return codes;
  for (const line of readFileSync(exitLog, 'utf8').split('\n')) {
    const [scenario, code] = line.split(' ');
    if (scenario && code) codes.set(scenario, Number(code));
  }
  return codes;
}

/** The Skills over MCP (SEP-2640) client scenarios and the check each must run and pass. */
const SKILL_SCENARIOS = [
  ['sep-2640-client-no-prefetch', 'sep-2640-host-no-prefetch'],
  ['sep-2640-client-verify-digest', 'sep-2640-host-verify-digest'],
  ['sep-2640-client-verify-size', 'sep-2640-host-size-mismatch-failure'],
  ['sep-2640-client-verify-frontmatter', 'sep-2640-host-frontmatter-comparison'],
] as const;

describe('MCP conformance suite 0.2.0-alpha.12 (MCP 2026-07-28) against McpClient', () => {
  it('passes every client scenario except the listed OAuth baseline, and the client exits 0 in each passing one', {
    timeout: 300_000,
  }, async () => {
    expect(existsSync(join(PACKAGE_DIR, 'dist', 'index.js'))).toBe(true);
    const folder = mkdtempSync(join(tmpdir(), 'toolfence-conformance-'));
    try {
      const exitLog = join(folder, 'exits.log');
      const expected = listed(BASELINE);
      const suite = await conformance(['--suite', 'all', '--expected-failures', BASELINE], exitLog);
      const passed = [...suite.output.matchAll(/✓ ([\w./-]+):/g)].map((m) => m[1] as string);
      expect(passed.length, suite.output.slice(-3000)).toBeGreaterThan(30);
      if (suite.status !== 0) {
        const failed = [...suite.output.matchAll(/✗ ([\w./-]+):/g)]
          .map((match) => match[1] as string)
          .filter((scenario) => !expected.has(scenario));
        // A non-zero exit that names no failed scenario (a crash, a harness error) is a failure.
        expect(failed.length, suite.output.slice(-3000)).toBeGreaterThan(0);
        expect(/stale|now pass/i.test(suite.output), suite.output.slice(-3000)).toBe(false);
        // Scenarios run in parallel; a timing scenario can miss its window on a loaded machine.
        const unexpected: string[] = [];
        for (const scenario of failed) {
          const alone = await conformance(
            ['--scenario', scenario, '--expected-failures', BASELINE],
            exitLog,
          );
          if (alone.status !== 0) unexpected.push(scenario);
          else passed.push(scenario);
        }
        expect(unexpected, suite.output.slice(-3000)).toEqual([]);
      }
      // The suite scores checks only: a passing scenario whose client exited non-zero is a
      // failure too, unless it is listed (with its reason) in the exit baseline.
      let codes = exits(exitLog);
      const allowed = listed(EXITS);
      const nonzero = () =>
        passed.filter((scenario) => (codes.get(scenario) ?? 0) !== 0 && !allowed.has(scenario));
      // As with failures: on a loaded machine a parallel run can time a client out; an
      // unexpected non-zero exit must then not recur when the scenario runs alone.
      for (const scenario of nonzero()) {
        await conformance(['--scenario', scenario, '--expected-failures', BASELINE], exitLog);
      }
      codes = exits(exitLog);
      expect(nonzero()).toEqual([]);
      const stale = [...allowed].filter((scenario) => codes.get(scenario) === 0);
      expect(stale, 'listed in expected-exits-alpha.yml but now exits 0').toEqual([]);
      for (const scenario of [
        'request-metadata',
        'http-standard-headers',
        'http-custom-headers',
        'http-invalid-tool-headers',
        'sep-2322-client-request-state',
        'json-schema-2020-12-preservation',
        ...SKILL_SCENARIOS.map(([scenario]) => scenario),
      ]) {
        expect(passed).toContain(scenario);
        expect(codes.get(scenario)).toBe(0);
      }
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  });

  // A scenario scores as passed with zero checks (or a SKIPPED one) when the client never asks
  // for skills; each of these must run its check, and the check must succeed.
  it.each(SKILL_SCENARIOS)(
    '%s runs its check %s and it succeeds',
    {
      timeout: 60_000,
    },
    async (scenario, check) => {
      const folder = mkdtempSync(join(tmpdir(), 'toolfence-conformance-'));
      try {
        const exitLog = join(folder, 'exits.log');
        const run = await conformance(['--scenario', scenario], exitLog);
        expect(run.status, run.output.slice(-3000)).toBe(0);
        expect(run.output).toMatch(/Passed: 1\/1, 0 failed, 0 warnings/);
        expect(run.output).toMatch(new RegExp(`\\[${check}\\] \\S*SUCCESS`));
        expect(run.output).not.toMatch(/SKIPPED|Not testable/);
        expect(exits(exitLog).get(scenario)).toBe(0);
      } finally {
        rmSync(folder, { recursive: true, force: true });
      }
    },
  );
});
