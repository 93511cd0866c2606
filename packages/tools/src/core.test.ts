import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as core from './core.js';
import * as main from './index.js';

/** The main entry's runtime names that `@toolfence/tools/core` leaves out, by area. */
const LEFT_OUT: readonly string[] = [
  // Built-in tools and the network guard's errors
  'FILE_SYSTEM_OPERATIONS',
  'FILE_SYSTEM_OPERATION_RISKS',
  'FileSystemAccessError',
  'FileSystemTool',
  'FileSystemToolOptionsError',
  'BubblewrapSandbox',
  'DEFAULT_BUBBLEWRAP_LIMITS',
  'DEFAULT_BUBBLEWRAP_READ_ONLY_PATHS',
  'DEFAULT_PROCESS_RESOURCE_LIMITS',
  'DEFAULT_PROGRAM_RULES',
  'SANDBOX_LIMITS',
  'LocalProcessSandbox',
  'SandboxUnavailableError',
  'MAX_SHELL_ARGUMENT_BYTES',
  'MAX_SHELL_ARGUMENTS',
  'ShellTool',
  'ShellToolOptionsError',
  'HTTP_TOOL_METHODS',
  'HTTP_TOOL_METHOD_RISKS',
  'HttpTool',
  'HttpToolOptionsError',
  'NetworkLimitError',
  'NetworkOptionsError',
  'NetworkPolicyError',
  'NetworkResolutionError',
  // The MCP connection, its registry and adapter
  'McpServerConfig',
  'McpServerConnection',
  'McpServerRegistry',
  'McpToolAdapter',
  // Skills
  'SkillAccessDeniedError',
  'SkillArgumentError',
  'SkillConfigurationError',
  'SkillFormatError',
  'SkillLimitError',
  'SkillNotFoundError',
  'SkillReadError',
  'SkillUnsafeFileError',
  'SKILL_FRONT_MATTER_KEYS',
  'SkillAccessPolicy',
  'isValidSkillName',
  'parseSkillDocument',
  'SKILL_NAME_PATTERN',
  'SkillLoader',
  'SkillRegistry',
  'SKILL_TOOL_CONTRACT',
  'SkillAdapter',
  'SkillTool',
];

describe('public surface of @toolfence/tools/core', () => {
  it('exports exactly the main entry less the built-in tools, the MCP connection and Skills', () => {
    expect(Object.keys(core).sort()).toEqual(
      Object.keys(main)
        .filter((name) => !LEFT_OUT.includes(name))
        .sort(),
    );
  });

  it('leaves out only names the main entry has', () => {
    expect(LEFT_OUT.filter((name) => !(name in main))).toEqual([]);
  });

  it('exports the very bindings of the main entry (one class, one registry, one symbol)', () => {
    const differing = Object.entries(core).filter(
      ([name, value]) => (main as Record<string, unknown>)[name] !== value,
    );
    expect(differing.map(([name]) => name)).toEqual([]);
  });

  it('loads none of the built-in tools, the MCP connection or Skills (the built entry, in a fresh process)', () => {
    const entry = new URL('../dist/core.js', import.meta.url).href;
    const log = join(mkdtempSync(join(tmpdir(), 'toolfence-core-entry-')), 'modules.log');
    // Loader hooks (their own thread) append each ES module's URL to the log as it loads.
    const hooks = `data:text/javascript,${encodeURIComponent(
      "import { appendFileSync } from 'node:fs'; let log; export function initialize(data) { log = data; } export async function load(url, context, next) { appendFileSync(log, url + '\\n'); return next(url, context); }",
    )}`;
    const script = `
      import { register } from 'node:module';
      register(${JSON.stringify(hooks)}, { data: ${JSON.stringify(log)} });
      await import(${JSON.stringify(entry)});
    `;
    const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8',
    });
    expect(run.stderr).toBe('');
    const loaded = readFileSync(log, 'utf8').split('\n').filter(Boolean);
    rmSync(dirname(log), { recursive: true, force: true });
    expect(loaded).toContain(entry);
    expect(
      loaded.filter((url) =>
        /\/tools\/dist\/(index\.js|builtin\/|skills\/|net\/|adapters\/|mcp\/(mcp-server-|mcp-tool-adapter))/.test(
          url,
        ),
      ),
    ).toEqual([]);
  });
});
