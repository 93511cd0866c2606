import { describe, expect, it } from 'vitest';
import { McpConfigurationError, McpToolNameCollisionError } from './errors.js';
import { assignMcpToolNames, MCP_TOOL_NAME_MAX_LENGTH, mcpToolName } from './tool-name.js';

describe('mcpToolName', () => {
  it('keeps a safe short name as mcp__<namespace>__<name>', () => {
    expect(mcpToolName('everything', 'get-sum')).toBe('mcp__everything__get-sum');
  });

  it.each([
    ['a dotted name', 'files.read'],
    ['a non-ASCII name', 'lire_fichier_é'],
    ['an emoji name', '🔥'],
    ['a name with spaces', 'read file'],
    ['a very long name', 'x'.repeat(200)],
    ['a long safe name', `tool_${'a'.repeat(60)}`],
  ])('maps %s to a safe, bounded, deterministic name with a hash suffix', (_label, name) => {
    const mapped = mcpToolName('ns', name);
    expect(mapped).toMatch(/^mcp__ns__[A-Za-z0-9_-]*_[0-9a-f]{8}$/);
    expect(mapped.length).toBeLessThanOrEqual(MCP_TOOL_NAME_MAX_LENGTH);
    expect(mcpToolName('ns', name)).toBe(mapped);
  });

  it('gives different originals that clean up alike different names', () => {
    expect(mcpToolName('ns', 'a.b')).not.toBe(mcpToolName('ns', 'a b'));
  });

  it.each([
    ['empty', ''],
    ['double underscore', 'a__b'],
    ['trailing underscore', 'abc_'],
    ['leading dash', '-abc'],
    ['too long', 'n'.repeat(25)],
    ['a dot', 'a.b'],
  ])('refuses a namespace that is %s', (_label, namespace) => {
    expect(() => mcpToolName(namespace, 'tool')).toThrow(McpConfigurationError);
  });

  it('refuses an empty tool name', () => {
    expect(() => mcpToolName('ns', '')).toThrow(McpConfigurationError);
  });
});

describe('assignMcpToolNames', () => {
  it('maps every name of a catalog', () => {
    const names = assignMcpToolNames('ns', ['a', 'b.c']);
    expect(names.get('a')).toBe('mcp__ns__a');
    expect(names.get('b.c')).toMatch(/^mcp__ns__b_c_[0-9a-f]{8}$/);
  });

  it('raises when a tool is listed twice', () => {
    expect(() => assignMcpToolNames('ns', ['a', 'a'])).toThrow(McpToolNameCollisionError);
  });

  it('raises when a literal name equals another tool’s hashed name', () => {
    const hashed = mcpToolName('ns', 'b.c').slice('mcp__ns__'.length);
    expect(() => assignMcpToolNames('ns', ['b.c', hashed])).toThrow(McpToolNameCollisionError);
  });
});
