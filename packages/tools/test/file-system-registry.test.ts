import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ApprovalRequest, FileSystemTool, RiskPolicy, ToolRegistry } from '../src/index.js';

let base: string;

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fs-registry-'));
  writeFileSync(join(base, 'notes.txt'), 'notes');
});

afterAll(() => {
  rmSync(base, { recursive: true, force: true });
});

function registryWith(tool: FileSystemTool, asked: ApprovalRequest[]): ToolRegistry {
  return new ToolRegistry({
    authorizer: new RiskPolicy(),
    approval: (request) => {
      asked.push(request);
      return true;
    },
    tools: [tool],
  });
}

describe('FileSystemTool in a ToolRegistry with a RiskPolicy', () => {
  it.each([
    ['write', { operation: 'write', path: 'new.txt', content: 'x' }],
    ['mkdir', { operation: 'mkdir', path: 'made' }],
    ['delete', { operation: 'delete', path: 'notes.txt' }],
    ['move', { operation: 'move', path: 'notes.txt', destination: 'moved.txt' }],
  ])(
    'answers a %s on a read-only tool with FS_WRITE_DISABLED, asking nobody',
    async (_label, args) => {
      const asked: ApprovalRequest[] = [];
      const registry = registryWith(new FileSystemTool({ root: base }), asked);
      try {
        const result = await registry.invoke('filesystem', args, { runId: 'r' });
        expect(result.isError).toBe(true);
        expect(result.metadata?.code).toBe('FS_WRITE_DISABLED');
        expect((result.content[0] as { text: string }).text).toMatch(/built without allowWrite/);
        expect(asked).toEqual([]);
        expect(readFileSync(join(base, 'notes.txt'), 'utf8')).toBe('notes');
        expect(existsSync(join(base, 'new.txt'))).toBe(false);
        expect(existsSync(join(base, 'made'))).toBe(false);
      } finally {
        await registry.close();
      }
    },
  );

  it('declares a read-only contract on a read-only tool and a destructive one with allowWrite', () => {
    const reader = new FileSystemTool({ root: base });
    const writer = new FileSystemTool({ root: base, allowWrite: true });
    expect(reader.spec.contract).toMatchObject({ risk: 'read-only', contentTrust: 'untrusted' });
    expect(writer.spec.contract).toMatchObject({ risk: 'destructive', contentTrust: 'untrusted' });
  });

  it('lets reads through without approval and asks for writes with the declared risk', async () => {
    const asked: ApprovalRequest[] = [];
    const registry = registryWith(new FileSystemTool({ root: base, allowWrite: true }), asked);
    try {
      for (const operation of ['read', 'stat', 'exists']) {
        const result = await registry.invoke(
          'filesystem',
          { operation, path: 'notes.txt' },
          { runId: 'r' },
        );
        expect(result.isError, JSON.stringify(result)).not.toBe(true);
      }
      await registry.invoke('filesystem', { operation: 'list' }, { runId: 'r' });
      await registry.invoke('filesystem', { operation: 'glob', pattern: '*' }, { runId: 'r' });
      expect(asked).toEqual([]);
      const written = await registry.invoke(
        'filesystem',
        { operation: 'write', path: 'approved.txt', content: 'ok' },
        { runId: 'r' },
      );
      expect(written.isError).not.toBe(true);
      expect(asked).toHaveLength(1);
      // The reason comes from the declared contract, not the name heuristic.
      expect(asked[0]?.reason).toBe('declared risk destructive');
    } finally {
      await registry.close();
    }
  });

  it('closes the root descriptor when the registry closes', async () => {
    const tool = new FileSystemTool({ root: base });
    const registry = new ToolRegistry({ authorizer: new RiskPolicy(), tools: [tool] });
    await registry.ready();
    await registry.close();
    const result = await tool.invoke(
      { operation: 'read', path: 'notes.txt' },
      { runId: 'r', metadata: {}, accessScope: 'full' },
    );
    expect(result.metadata?.code).toBe('FS_IO_ERROR');
  });
});
