import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ApprovalRequest,
  ApprovalRequiredError,
  contractOf,
  FileSystemTool,
  type JsonObject,
  PermissionDeniedError,
  permission,
  RiskPolicy,
  RuleBasedPolicy,
  type SchemaValidator,
  type ToolEvent,
  ToolInputError,
  ToolRegistry,
} from '../src/index.js';

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
      // The reason comes from the write operation's declared contract, not the name heuristic
      // and not the tool's worst case.
      expect(asked[0]?.reason).toBe('declared risk high-risk-write');
      expect(asked[0]?.operation).toBe('write');
      expect(asked[0]?.contract?.risk).toBe('high-risk-write');
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

describe('FileSystemTool per-operation contracts: a call is judged by what it does', () => {
  // Each row: the risk the approval is asked with ('none': nobody is asked) and the arguments.
  it.each([
    ['read', 'none', { operation: 'read', path: 'a.txt' }],
    ['read with write arguments', 'none', { operation: 'read', path: 'a.txt', content: 'x' }],
    ['stat', 'none', { operation: 'stat', path: 'a.txt' }],
    ['list', 'none', { operation: 'list' }],
    ['mkdir', 'low-risk-write', { operation: 'mkdir', path: 'folder' }],
    ['write', 'high-risk-write', { operation: 'write', path: 'a.txt', content: 'new' }],
    ['move', 'high-risk-write', { operation: 'move', path: 'a.txt', destination: 'c.txt' }],
    [
      'move over a file',
      'destructive',
      { operation: 'move', path: 'a.txt', destination: 'b.txt', overwrite: true },
    ],
    [
      'move with overwrite: false',
      'high-risk-write',
      { operation: 'move', path: 'a.txt', destination: 'c.txt', overwrite: false },
    ],
    ['delete', 'destructive', { operation: 'delete', path: 'a.txt' }],
  ] as const)('%s is asked as %s', async (_label, risk, args) => {
    const root = mkdtempSync(join(tmpdir(), 'toolfence-fs-ops-'));
    writeFileSync(join(root, 'a.txt'), 'a');
    writeFileSync(join(root, 'b.txt'), 'b');
    const asked: ApprovalRequest[] = [];
    const registry = new ToolRegistry({
      authorizer: new RiskPolicy(),
      // Declining keeps the workspace as it was, so a wrongly lowered contract shows as a change.
      approval: (request) => {
        asked.push(request);
        return false;
      },
      tools: [new FileSystemTool({ root, allowWrite: true })],
    });
    try {
      const call = registry.invoke('filesystem', args, { runId: 'r' });
      if (risk === 'none') {
        expect((await call).isError).not.toBe(true);
        expect(asked).toEqual([]);
      } else {
        await expect(call).rejects.toSatisfy((error) => PermissionDeniedError.isInstance(error));
        expect(asked.map((request) => request.contract?.risk)).toEqual([risk]);
        expect(asked[0]?.reason).toBe(`declared risk ${risk}`);
      }
      expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('a');
      expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('b');
      expect(existsSync(join(root, 'c.txt'))).toBe(false);
      expect(existsSync(join(root, 'folder'))).toBe(false);
    } finally {
      await registry.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  // A validator that accepts anything: the contract layer alone must still refuse these.
  const lax: SchemaValidator = { prepare() {}, validate: () => ({ valid: true }) };

  it.each([
    ['an operation in another case', { operation: 'DELETE', path: 'a.txt' }],
    ['an unknown operation', { operation: 'shred', path: 'a.txt' }],
    ['the internal name of move over', { operation: 'move-overwrite', path: 'a.txt' }],
    ['an operation in an array', { operation: ['delete'], path: 'a.txt' }],
    ['no operation', { path: 'a.txt' }],
  ])('refuses %s before the tool runs, even past a lax validator', async (_label, args) => {
    const root = mkdtempSync(join(tmpdir(), 'toolfence-fs-ops-'));
    writeFileSync(join(root, 'a.txt'), 'a');
    const tool = new FileSystemTool({ root, allowWrite: true });
    let ran = 0;
    const invoke = tool.invoke.bind(tool);
    const counted = {
      spec: tool.spec,
      invoke: (...call: Parameters<typeof invoke>) => {
        ran += 1;
        return invoke(...call);
      },
    };
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission('allow') },
      validator: lax,
      tools: [counted],
    });
    try {
      await expect(registry.invoke('filesystem', args, { runId: 'r' })).rejects.toSatisfy(
        (error) =>
          ToolInputError.isInstance(error) && error.details?.reason === 'unknown-operation',
      );
      expect(ran).toBe(0);
      expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('a');
    } finally {
      await registry.close();
      await tool.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('publishes the riskiest operation as the static contract and audits the call’s own', async () => {
    const root = mkdtempSync(join(tmpdir(), 'toolfence-fs-ops-'));
    writeFileSync(join(root, 'a.txt'), 'a');
    const events: ToolEvent[] = [];
    const tool = new FileSystemTool({ root, allowWrite: true });
    const registry = new ToolRegistry({
      authorizer: new RiskPolicy({ risk: { allowUpTo: 'high-risk-write' } }),
      onEvent: (event) => events.push(event),
      tools: [tool],
    });
    try {
      expect(contractOf(tool.spec)?.risk).toBe('destructive');
      await registry.invoke('filesystem', { operation: 'read', path: 'a.txt' }, { runId: 'r' });
      await registry.invoke(
        'filesystem',
        { operation: 'write', path: 'a.txt', content: 'b' },
        { runId: 'r' },
      );
      await expect(
        registry.invoke('filesystem', { operation: 'delete', path: 'a.txt' }, { runId: 'r' }),
      ).rejects.toSatisfy((error) => ApprovalRequiredError.isInstance(error));
      const closing = events
        .filter((event) => event.type !== 'started')
        .map((event) => [event.type, event.operation, event.risk]);
      expect(closing).toEqual([
        ['completed', 'read', 'read-only'],
        ['completed', 'write', 'high-risk-write'],
        ['denied', 'delete', 'destructive'],
      ]);
      expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('b');
    } finally {
      await registry.close();
      rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('FileSystemTool behind pathUnder rules, its root configured through a link', () => {
  // base/srv-ws links to base/data/ws. Rules are written on the root as configured; every
  // spelling of a path into .git must be denied by the policy or refused by the tool.
  let linkBase: string;
  let configured: string;
  let real: string;
  const hook = () => join(real, '.git', 'hooks', 'pre-commit');

  beforeAll(() => {
    linkBase = mkdtempSync(join(tmpdir(), 'toolfence-fs-spelling-'));
    real = join(linkBase, 'data', 'ws');
    mkdirSync(join(real, '.git', 'hooks'), { recursive: true });
    mkdirSync(join(real, 'src'));
    configured = join(linkBase, 'srv-ws');
    symlinkSync(real, configured);
  });

  afterAll(() => {
    rmSync(linkBase, { recursive: true, force: true });
  });

  function guarded(rules: 'path' | 'path and destination'): ToolRegistry {
    const git = { pathUnder: `${configured}/.git` };
    const operation = ['write', 'mkdir', 'delete', 'move', 'move-overwrite'];
    return new ToolRegistry({
      tools: [new FileSystemTool({ root: configured, allowWrite: true })],
      authorizer: new RuleBasedPolicy([
        { tool: 'filesystem', operation, when: { path: git }, decision: 'deny' },
        ...(rules === 'path and destination'
          ? [
              {
                tool: 'filesystem',
                operation,
                when: { destination: git },
                decision: 'deny',
              } as const,
            ]
          : []),
        { tool: 'filesystem', decision: 'allow' },
      ]),
    });
  }

  async function outcome(registry: ToolRegistry, args: JsonObject): Promise<string> {
    try {
      const result = await registry.invoke('filesystem', args, { runId: 'r' });
      return result.isError === true ? String(result.metadata?.code) : 'done';
    } catch (error) {
      return PermissionDeniedError.isInstance(error) ? 'denied' : String(error);
    }
  }

  it('denies or refuses every spelling of a write into .git', async () => {
    const registry = guarded('path');
    try {
      const spellings = [
        '.git/hooks/pre-commit',
        `${configured}/.git/hooks/pre-commit`,
        `${configured}//.git/hooks/pre-commit`,
        `${configured}/src/../.git/hooks/pre-commit`,
        `${real}/.git/hooks/pre-commit`,
        `${real}//.git/hooks/pre-commit`,
        `${real}/src/../.git/hooks/pre-commit`,
        `${real}/.git/hooks/../hooks/pre-commit`,
      ];
      const outcomes: Record<string, string> = {};
      for (const path of spellings) {
        outcomes[path] = await outcome(registry, {
          operation: 'write',
          path,
          content: '#!/bin/sh',
        });
      }
      expect(Object.entries(outcomes).filter(([, code]) => code === 'done')).toEqual([]);
      expect(existsSync(hook())).toBe(false);
      // The real path is refused by the tool with the accepted form, not by the policy.
      const refused = await registry.invoke(
        'filesystem',
        { operation: 'read', path: `${real}/src` },
        { runId: 'r' },
      );
      expect(refused.metadata?.code).toBe('FS_PATH_INVALID');
      expect((refused.content[0] as { text: string }).text).toContain(
        `only under the root as configured, ${JSON.stringify(configured)}`,
      );
    } finally {
      await registry.close();
    }
  });

  it('judges move’s destination only with a rule keyed on destination', async () => {
    writeFileSync(join(real, 'src', 'payload'), '#!/bin/sh');
    const move = {
      operation: 'move',
      path: `${configured}/src/payload`,
      destination: `${configured}/.git/hooks/pre-commit`,
    };
    const both = guarded('path and destination');
    try {
      expect(await outcome(both, move)).toBe('denied');
      expect(await outcome(both, { ...move, destination: `${real}/.git/hooks/pre-commit` })).toBe(
        'FS_PATH_INVALID',
      );
      expect(existsSync(hook())).toBe(false);
    } finally {
      await both.close();
    }
    const pathOnly = guarded('path');
    try {
      // A rule on path alone leaves destination unjudged: the README says to write both.
      expect(await outcome(pathOnly, move)).toBe('done');
      expect(existsSync(hook())).toBe(true);
    } finally {
      await pathOnly.close();
      rmSync(hook());
    }
  });
});
