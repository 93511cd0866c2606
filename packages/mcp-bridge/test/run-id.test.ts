import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { nextRunId } from '../src/gateway/run-id.js';

const SHAPE =
  /^gateway-([0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12})-([1-9][0-9]*)$/;

describe('run ids of the gateway’s calls', () => {
  it('are distinct within a process: one random process part, then a counter', () => {
    const ids = Array.from({ length: 10_000 }, () => nextRunId());
    expect(new Set(ids).size).toBe(ids.length);
    const parts = ids.map((id) => SHAPE.exec(id));
    for (const part of parts) expect(part).not.toBeNull();
    expect(new Set(parts.map((part) => part?.[1])).size).toBe(1);
  });

  it('differ between processes (replicas sharing a budget store never share one)', () => {
    const module = fileURLToPath(new URL('../dist/gateway/run-id.js', import.meta.url));
    const script = `import(${JSON.stringify(module)}).then((m) => process.stdout.write(m.nextRunId()))`;
    const [first, second] = [0, 1].map(() =>
      execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }),
    );
    expect(first).toMatch(SHAPE);
    expect(second).toMatch(SHAPE);
    expect(first?.endsWith('-1')).toBe(true);
    expect(first).not.toBe(second);
  });
});
