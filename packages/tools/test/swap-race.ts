import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

// Swaps two names with an atomic rename exchange (renameat2 RENAME_EXCHANGE) in a second
// process until stopped: the bounded folder<->symlink race the Skills and ShellTool race tests
// run (the FileSystemTool race tests drive the same fixture).
const EXCHANGE = fileURLToPath(new URL('./fixtures/rename-exchange.pl', import.meta.url));
const SYS_RENAMEAT2: Readonly<Record<string, number>> = { x64: 316, arm64: 276, ia32: 353 };

/** A running exchanger; `stop` ends it, restores the original order and gives the swap count. */
export interface Exchanger {
  stop(): Promise<number>;
  /** Kills the exchanger if it still runs and waits for its exit (for `afterEach`). */
  kill(): Promise<void>;
}

/** Starts exchanging `left` and `right`; resolves once the first swap is about to run. */
export async function startExchange(left: string, right: string): Promise<Exchanger> {
  const syscall = SYS_RENAMEAT2[process.arch];
  if (syscall === undefined) throw new Error(`no renameat2 syscall number for ${process.arch}`);
  const swapper = spawn('perl', [EXCHANGE, String(syscall), left, right], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  swapper.stdout.setEncoding('utf8');
  const exited = new Promise<number | null>((resolve) => swapper.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    swapper.stdout.on('data', (chunk: string) => {
      output += chunk;
      if (output.includes('ready\n')) resolve();
    });
    swapper.once('error', reject);
    swapper.once('exit', (code) => reject(new Error(`exchanger exited early (${code})`)));
  });
  return {
    async stop() {
      swapper.kill('SIGTERM');
      const code = await exited;
      if (code !== 0) throw new Error(`exchanger exited with ${code}`);
      return Number(output.split('\n')[1]);
    },
    kill: () => killAndWait(swapper),
  };
}

/**
 * Kills a process that still runs (SIGKILL) and resolves once it exited: a folder it renames
 * in may be removed then (removing it sooner races with the process: ENOTEMPTY).
 */
export async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/**
 * Runs `attempt` in `workers` loops until `milliseconds` pass or `maxAttempts` ran (a deadline,
 * not a timer: an attempt that never yields cannot starve it). Returns how many ran.
 */
export async function raceFor(
  milliseconds: number,
  maxAttempts: number,
  workers: number,
  attempt: (index: number) => Promise<void>,
): Promise<number> {
  const deadline = performance.now() + milliseconds;
  let attempts = 0;
  const worker = async (): Promise<void> => {
    while (performance.now() < deadline && attempts < maxAttempts) {
      const index = attempts;
      attempts += 1;
      await attempt(index);
    }
  };
  await Promise.all(Array.from({ length: workers }, () => worker()));
  return attempts;
}
