import { describe, expect, it } from 'vitest';
import { CONTRACT_META_KEY, toolAnnotations } from './annotations.js';
import { type ContractInput, defineContract } from './define-contract.js';
import { detectDowngrades } from './detect-downgrades.js';
import type { ToolListEntry } from './read-contract.js';

function tool(name: string, input?: ContractInput, description?: string): ToolListEntry {
  return {
    name,
    ...(description === undefined ? {} : { description }),
    ...(input === undefined ? {} : { annotations: toolAnnotations(defineContract(input)) }),
  };
}

describe('detectDowngrades', () => {
  it('finds nothing when nothing changed', () => {
    const catalog = [tool('a', { risk: 'destructive' }), tool('get_b')];
    expect(detectDowngrades(catalog, catalog)).toEqual([]);
  });

  it('reports a lowered risk', () => {
    const findings = detectDowngrades(
      [tool('wipe', { risk: 'destructive' })],
      [tool('wipe', { risk: 'read-only' })],
    );
    expect(findings).toEqual([
      {
        tool: 'wipe',
        reasons: ['risk-lowered'],
        previous: {
          source: 'declared',
          risk: 'destructive',
          contentTrust: 'trusted',
          declared: true,
        },
        next: { source: 'declared', risk: 'read-only', contentTrust: 'trusted', declared: true },
      },
    ]);
  });

  it('reports a lowered content trust', () => {
    const findings = detectDowngrades(
      [tool('fetch', { risk: 'read-only', contentTrust: 'prompt-injection-prone' })],
      [tool('fetch', { risk: 'read-only', contentTrust: 'untrusted' })],
    );
    expect(findings.map((finding) => finding.reasons)).toEqual([['content-trust-lowered']]);
  });

  it('does not report a raised risk or trust', () => {
    expect(
      detectDowngrades(
        [tool('a', { risk: 'read-only' })],
        [tool('a', { risk: 'destructive', contentTrust: 'sensitive' })],
      ),
    ).toEqual([]);
  });

  it('reports a tool that went from declared to undeclared, even when the guess is higher', () => {
    const findings = detectDowngrades(
      [tool('frobnicate', { risk: 'read-only' })],
      [tool('frobnicate')],
    );
    expect(findings).toHaveLength(1);
    expect(findings[0]?.reasons).toEqual(['declaration-removed']);
    expect(findings[0]?.next).toEqual({
      source: 'heuristic',
      risk: 'high-risk-write',
      contentTrust: 'untrusted',
      declared: false,
    });
  });

  it('reports every reason of one tool in one finding', () => {
    const findings = detectDowngrades(
      [tool('get_file', { risk: 'destructive', contentTrust: 'prompt-injection-prone' })],
      [tool('get_file')],
    );
    expect(findings).toHaveLength(1);
    expect(findings[0]?.reasons).toEqual([
      'risk-lowered',
      'content-trust-lowered',
      'declaration-removed',
    ]);
  });

  it('treats an unreadable declaration as removed', () => {
    const findings = detectDowngrades(
      [tool('x', { risk: 'read-only' })],
      [{ name: 'x', annotations: { risk_level: 'read_only', content_trust_risk: 'trusted' } }],
    );
    expect(findings[0]?.reasons).toContain('declaration-removed');
  });

  it('reads declarations from _meta as well as annotations', () => {
    const annotations = toolAnnotations(defineContract({ risk: 'destructive' }));
    const findings = detectDowngrades(
      [{ name: 'x', _meta: { [CONTRACT_META_KEY]: annotations } }],
      [{ name: 'x', annotations }],
    );
    expect(findings).toEqual([]);
  });

  it('accepts a recorded override for the weakened fact', () => {
    const previous = [tool('wipe', { risk: 'destructive' })];
    const next = [tool('wipe', { risk: 'read-only' })];
    expect(detectDowngrades(previous, next, { wipe: { risk: 'read-only' } })).toEqual([]);
    // An override of another fact does not record a decision about the risk.
    expect(
      detectDowngrades(previous, next, { wipe: { contentTrust: 'sensitive' } })[0]?.reasons,
    ).toEqual(['risk-lowered']);
  });

  it('accepts a removed declaration only when the override decides risk and trust, or vetoes', () => {
    const previous = [tool('zap', { risk: 'read-only' })];
    const next = [tool('zap')];
    expect(detectDowngrades(previous, next, { zap: { risk: 'read-only' } })).toHaveLength(1);
    expect(
      detectDowngrades(previous, next, { zap: { risk: 'read-only', contentTrust: 'trusted' } }),
    ).toEqual([]);
    expect(detectDowngrades(previous, next, { zap: { veto: true } })).toEqual([]);
  });

  it('ignores removed and new tools', () => {
    expect(
      detectDowngrades(
        [tool('old', { risk: 'destructive' })],
        [tool('new', { risk: 'read-only' })],
      ),
    ).toEqual([]);
  });

  it('compares the most cautious previous duplicate with the least cautious next one', () => {
    const findings = detectDowngrades(
      [tool('dup', { risk: 'read-only' }), tool('dup', { risk: 'destructive' })],
      [tool('dup', { risk: 'destructive' }), tool('dup', { risk: 'low-risk-write' })],
    );
    expect(findings.map((finding) => [finding.previous.risk, finding.next.risk])).toEqual([
      ['destructive', 'low-risk-write'],
    ]);
  });

  it('sorts findings by tool name and accepts { tools } snapshots', () => {
    const previous = {
      tools: [tool('b', { risk: 'destructive' }), tool('a', { risk: 'destructive' })],
    };
    const next = { tools: [tool('a', { risk: 'read-only' }), tool('b', { risk: 'read-only' })] };
    expect(detectDowngrades(previous, next).map((finding) => finding.tool)).toEqual(['a', 'b']);
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])(
    'handles a tool named %s without reading the prototype of overrides',
    (name) => {
      const findings = detectDowngrades(
        [tool(name, { risk: 'destructive' })],
        [tool(name, { risk: 'read-only' })],
        {},
      );
      expect(findings.map((finding) => finding.tool)).toEqual([name]);
    },
  );

  it.each([
    ['a string snapshot', 'tools', []],
    ['an object without tools', { items: [] }, []],
    ['an entry without a name', [{}], []],
    ['a null entry', [null], []],
  ])('rejects %s', (_name, previous, next) => {
    expect(() => detectDowngrades(previous as never, next as never)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_CATALOG' }),
    );
  });

  it('rejects invalid overrides', () => {
    expect(() => detectDowngrades([], [], { a: { risk: 'safe' as never } })).toThrow(
      expect.objectContaining({ code: 'CONTRACT_UNKNOWN_RISK' }),
    );
    expect(() => detectDowngrades([], [], null as never)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_CATALOG' }),
    );
  });
});
