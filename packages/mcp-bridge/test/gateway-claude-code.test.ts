import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FILESYSTEM_ENTRY, packageEntry } from './helpers.js';

// The real Claude Code CLI (pinned dev dependency @anthropic-ai/claude-code 2.1.332; its native
// binary comes from the platform package, no install script runs), end to end through the
// gateway: `claude -p` against a fake Anthropic API on 127.0.0.1 calls tools of
// `server-filesystem` and `server-memory` through `toolfence-mcp serve`, beside a server that
// fails to start. Each run is in its own network namespace with only loopback up; where that is
// not possible the tests are skipped with the reason printed. `ENABLE_TOOL_SEARCH=false` offers
// the MCP tools to the model directly. Every process is wrapped in a stdio tap
// (fixtures/stdio-tap.mjs) that records what it received and answered: the gateway (what Claude
// Code sent it) and each upstream (what reached the server). An `ask` is answered by Claude
// Code's `Elicitation` hook (fixtures/elicitation-hook.mjs): in `-p` mode there is no dialog, and
// without a hook Claude Code answers `cancel` itself.

const RUNNER = fileURLToPath(new URL('./fixtures/claude-gateway-runner.mjs', import.meta.url));
const TAP = fileURLToPath(new URL('./fixtures/stdio-tap.mjs', import.meta.url));
const HOOK = fileURLToPath(new URL('./fixtures/elicitation-hook.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const MEMORY_ENTRY = packageEntry('@modelcontextprotocol/server-memory', 'dist/index.js');
const BROKEN_STDERR = 'cannot start: the folder /nowhere is not accessible';

function findClaude(): { path: string } | { reason: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return {
      reason: `the test runs the linux-x64 binary; this is ${process.platform}-${process.arch}`,
    };
  }
  if (spawnSync('unshare', ['-n', 'sh', '-c', 'ip link set lo up']).status !== 0) {
    return { reason: 'unshare -n with "ip link set lo up" is not permitted here (needs root)' };
  }
  try {
    const wrapper = createRequire(import.meta.url).resolve(
      '@anthropic-ai/claude-code/package.json',
    );
    const native = createRequire(wrapper).resolve(
      '@anthropic-ai/claude-code-linux-x64/package.json',
    );
    const path = join(dirname(native), 'claude');
    const version = spawnSync(path, ['--version'], { encoding: 'utf8' });
    if (version.status !== 0) return { reason: 'claude --version failed' };
    return { path };
  } catch {
    return {
      reason: 'the @anthropic-ai/claude-code dev dependency (linux-x64 binary) is not installed',
    };
  }
}

const claude = findClaude();
if ('reason' in claude)
  process.stderr.write(`gateway-claude-code.test.ts skipped: ${claude.reason}\n`);

interface Step {
  readonly name: string;
  readonly input: Record<string, unknown>;
}

interface TapLine {
  readonly dir: 'in' | 'out';
  readonly ms: number;
  readonly message: {
    id?: unknown;
    method?: string;
    params?: Record<string, unknown> & { _meta?: Record<string, unknown>; name?: string };
    result?: Record<string, unknown>;
  };
}

interface AuditLine {
  readonly tool: string;
  readonly decision: string;
  readonly outcome: string;
  readonly approvedBy?: string;
}

interface Session {
  readonly home: string;
  readonly code: number | null;
  /** Every request body Claude Code sent to the model, as text. */
  readonly modelSaw: string;
  /** The tool results Claude Code sent back to the model, in order, as text. */
  readonly results: string[];
  /** The tool names offered to the model in its first request. */
  readonly offered: string[];
  /** What Claude Code sent the gateway, and what the gateway answered. */
  readonly gateway: TapLine[];
  readonly fs: TapLine[];
  readonly memory: TapLine[];
  readonly gatewayStderr: string;
  readonly audit: AuditLine[];
  /** What the gateway asked through elicitation (Claude Code's hook input), one per ask. */
  readonly asked: { mcp_server_name: string; message: string }[];
  /** Claude Code's own debug log. */
  readonly debug: string;
}

const homes: string[] = [];
afterAll(() => {
  for (const home of homes) rmSync(home, { recursive: true, force: true });
});

function lines<T>(file: string): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as T);
}

/**
 * One `claude -p` session through the gateway. `hook`: how the Elicitation hook answers (`none`:
 * no hook); `script`: the model's tool calls, given the folder server-filesystem serves.
 */
function session(
  hook: 'accept' | 'decline' | 'none',
  script: (files: string) => readonly Step[],
): Session {
  const home = mkdtempSync(join(tmpdir(), 'toolfence-claude-gateway-'));
  homes.push(home);
  mkdirSync(join(home, 'files'));
  mkdirSync(join(home, '.claude'));
  writeFileSync(join(home, 'files', 'notes.txt'), 'hello from the file\n');
  const node = process.execPath;
  const tapped = (name: string, argv: string[]) => [TAP, join(home, `${name}.log`), '--', ...argv];
  writeFileSync(
    join(home, 'toolfence.json'),
    JSON.stringify({
      mcpServers: {
        fs: { command: node, args: tapped('fs', [node, FILESYSTEM_ENTRY, join(home, 'files')]) },
        memory: {
          command: node,
          args: tapped('memory', [node, MEMORY_ENTRY]),
          env: { MEMORY_FILE_PATH: join(home, 'memory.jsonl') },
        },
        broken: {
          command: node,
          args: [
            '-e',
            `process.stderr.write(${JSON.stringify(`${BROKEN_STDERR}\n`)}); process.exit(3)`,
          ],
        },
      },
    }),
  );
  writeFileSync(
    join(home, 'policy.json'),
    JSON.stringify({
      kind: 'rules',
      rules: [
        { tool: 'write_file', decision: 'deny', reason: 'the model does not write files' },
        { tool: 'read_text_file', decision: 'allow' },
        { tool: 'create_entities', decision: 'ask', reason: 'memory writes are asked' },
        { server: 'memory', decision: 'allow' },
      ],
      default: 'deny',
    }),
  );
  writeFileSync(
    join(home, 'mcp.json'),
    JSON.stringify({
      mcpServers: {
        gateway: {
          command: node,
          args: tapped('gateway', [
            node,
            CLI,
            'serve',
            '--config',
            join(home, 'toolfence.json'),
            '--policy',
            join(home, 'policy.json'),
          ]),
        },
      },
    }),
  );
  if (hook !== 'none') {
    writeFileSync(
      join(home, '.claude', 'settings.json'),
      JSON.stringify({
        hooks: {
          Elicitation: [
            { matcher: 'gateway', hooks: [{ type: 'command', command: `"${node}" "${HOOK}"` }] },
          ],
        },
      }),
    );
  }
  const path = 'path' in claude ? claude.path : '';
  // setsid: the CLI and everything it starts get their own session and process group, so no
  // signal they send on exit can reach the test runner.
  const result = spawnSync(
    'setsid',
    ['unshare', '-n', 'sh', '-c', 'ip link set lo up && exec "$0" "$1"', node, RUNNER],
    {
      env: {
        ...process.env,
        E2E_CLAUDE: path,
        E2E_HOME: home,
        E2E_SCRIPT: JSON.stringify(script(join(home, 'files'))),
        E2E_MCP_CONFIG: join(home, 'mcp.json'),
        E2E_ALLOWED: 'mcp__gateway',
        E2E_ELICIT_LOG: join(home, 'elicit.jsonl'),
        E2E_ELICIT_ACTION: hook,
      },
      encoding: 'utf8',
      timeout: 120_000,
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  const summary = JSON.parse(result.stdout.trim().split('\n').pop() ?? '{}') as {
    code: number | null;
    requests: { tools?: { name: string }[]; messages?: { content?: unknown }[] }[];
  };
  const last = summary.requests.at(-1);
  const results = (last?.messages ?? []).flatMap((message) =>
    Array.isArray(message.content)
      ? message.content
          .filter((block: { type?: string }) => block.type === 'tool_result')
          .map((block: unknown) => JSON.stringify(block))
      : [],
  );
  const debugFile = join(home, '.claude', 'debug', 'latest');
  return {
    home,
    code: summary.code,
    modelSaw: JSON.stringify(summary.requests),
    results,
    offered: (summary.requests[0]?.tools ?? []).map((tool) => tool.name),
    gateway: lines<TapLine>(join(home, 'gateway.log')),
    fs: lines<TapLine>(join(home, 'fs.log')),
    memory: lines<TapLine>(join(home, 'memory.log')),
    gatewayStderr: existsSync(join(home, 'gateway.log.stderr'))
      ? readFileSync(join(home, 'gateway.log.stderr'), 'utf8')
      : '',
    audit: lines<AuditLine>(join(home, 'toolfence-audit.jsonl')),
    asked: lines(join(home, 'elicit.jsonl')),
    debug: existsSync(debugFile) ? readFileSync(debugFile, 'utf8') : '',
  };
}

/** The tools/call requests a tap saw arrive, by tool name. */
const calls = (tap: TapLine[]): { name?: string; arguments?: unknown }[] =>
  tap
    .filter((line) => line.dir === 'in' && line.message.method === 'tools/call')
    .map((line) => line.message.params as { name?: string; arguments?: unknown });

/**
 * The audit outcomes of one tool. A modern client's ask adds an `asked` line first; it is
 * dropped here so a row does not depend on the era (the negotiation row checks the era).
 */
const outcomes = (run: Session, tool: string): string[] =>
  run.audit
    .filter((line) => line.tool === tool && line.outcome !== 'asked')
    .map((line) => line.outcome);

const CREATE_ADA: Step = {
  name: 'mcp__gateway__memory__create_entities',
  input: { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote the notes'] }] },
};
const READ_GRAPH: Step = { name: 'mcp__gateway__memory__read_graph', input: {} };

describe.skipIf('reason' in claude)(
  'Claude Code 2.1.332 through toolfence-mcp serve (fake model; server-filesystem, server-memory, a server that fails)',
  () => {
    describe('one session: allow, deny by the server tool name, ask accepted, a failed server', () => {
      let run: Session;
      let files: string;
      beforeAll(() => {
        run = session('accept', (folder) => [
          { name: 'mcp__gateway__fs__read_text_file', input: { path: join(folder, 'notes.txt') } },
          {
            name: 'mcp__gateway__fs__write_file',
            input: { path: join(folder, 'written.txt'), content: 'from the model' },
          },
          CREATE_ADA,
          READ_GRAPH,
        ]);
        files = join(run.home, 'files');
      }, 150_000);

      it('negotiates MCP 2026-07-28: the gateway answered server/discover inside the probe bound', () => {
        const first = run.gateway.find((line) => line.dir === 'in');
        expect(first?.message.method).toBe('server/discover');
        expect(first?.message.params?._meta?.['io.modelcontextprotocol/protocolVersion']).toBe(
          '2026-07-28',
        );
        const answer = run.gateway.find(
          (line) => line.dir === 'out' && line.message.id === first?.message.id,
        );
        expect(answer?.message.result?.supportedVersions).toContain('2026-07-28');
        process.stderr.write(
          `gateway-claude-code: server/discover answered ${(answer?.ms ?? 0) - (first?.ms ?? 0)} ms after it arrived\n`,
        );
        // Claude Code fell back to a 2025-11-25 `initialize` if the probe timed out.
        expect(run.gateway.filter((line) => line.message.method === 'initialize')).toEqual([]);
        expect(run.debug).toContain('"negotiatedProtocolVersion":"2026-07-28"');
        const sent = run.gateway.filter(
          (line) => line.dir === 'in' && line.message.method === 'tools/call',
        );
        expect(sent.length).toBeGreaterThan(0);
        for (const line of sent)
          expect(line.message.params?._meta?.['io.modelcontextprotocol/protocolVersion']).toBe(
            '2026-07-28',
          );
      });

      it('allow: read_text_file reaches server-filesystem and the model gets the content', () => {
        expect(run.code).toBe(0);
        expect(calls(run.fs).filter((call) => call.name === 'read_text_file')).toEqual([
          { name: 'read_text_file', arguments: { path: join(files, 'notes.txt') } },
        ]);
        expect(run.results[0]).toContain('hello from the file');
        expect(outcomes(run, 'fs__read_text_file')).toEqual(['started', 'ok']);
      });

      it('deny written with the server tool name: write_file never reaches the server, the model gets the reason', () => {
        expect(calls(run.fs).map((call) => call.name)).not.toContain('write_file');
        expect(existsSync(join(files, 'written.txt'))).toBe(false);
        expect(run.results[1]).toContain(
          "The call to fs__write_file is denied by the gateway's policy (the model does not write files), so it did not run.",
        );
        expect(run.audit.filter((line) => line.tool === 'fs__write_file')).toMatchObject([
          { decision: 'deny', outcome: 'denied' },
        ]);
      });

      it('ask accepted: Claude Code is asked once with the exact arguments, the hook accepts, server-memory stores it', () => {
        expect(run.asked).toHaveLength(1);
        expect(run.asked[0]?.mcp_server_name).toBe('gateway');
        expect(run.asked[0]?.message).toContain('memory__create_entities');
        expect(run.asked[0]?.message).toContain('memory writes are asked');
        expect(run.asked[0]?.message).toContain('"wrote the notes"');
        expect(calls(run.memory).filter((call) => call.name === 'create_entities')).toEqual([
          { name: 'create_entities', arguments: CREATE_ADA.input },
        ]);
        expect(readFileSync(join(run.home, 'memory.jsonl'), 'utf8')).toContain('"Ada"');
        expect(run.results[3]).toContain('wrote the notes');
        expect(outcomes(run, 'memory__create_entities')).toEqual(['started', 'ok']);
        expect(
          run.audit.filter(
            (line) => line.tool === 'memory__create_entities' && line.outcome === 'started',
          ),
        ).toMatchObject([{ decision: 'ask', approvedBy: 'user' }]);
      });

      it('a server that fails to start beside working ones: their tools are offered and usable, the gateway stays connected', () => {
        expect(run.offered).toContain('mcp__gateway__fs__read_text_file');
        expect(run.offered).toContain('mcp__gateway__memory__read_graph');
        expect(run.offered.filter((name) => name.includes('broken'))).toEqual([]);
        expect(run.debug).not.toMatch(
          /MCP server "gateway".*(Failed to connect|connection failed)/i,
        );
        expect(calls(run.memory).map((call) => call.name)).toEqual([
          'create_entities',
          'read_graph',
        ]);
        expect(run.gatewayStderr).toContain('broken');
      });

      it("the failed server's exit code and stderr tail reach the gateway's stderr", () => {
        expect(run.gatewayStderr).toContain(BROKEN_STDERR);
        expect(run.gatewayStderr).toMatch(/\b(exit code|exited with|code) 3\b/);
      });

      it('the audit log verifies and holds exactly these calls', () => {
        const verify = spawnSync(
          process.execPath,
          [CLI, 'audit', 'verify', '--log', join(run.home, 'toolfence-audit.jsonl')],
          { encoding: 'utf8' },
        );
        expect(verify.status).toBe(0);
        expect(
          run.audit
            .filter((line) => line.outcome !== 'asked')
            .map((line) => `${line.tool} ${line.outcome}`),
        ).toEqual([
          'fs__read_text_file started',
          'fs__read_text_file ok',
          'fs__write_file denied',
          'memory__create_entities started',
          'memory__create_entities ok',
          'memory__read_graph started',
          'memory__read_graph ok',
        ]);
      });
    });

    it('ask declined by the hook: server-memory never gets the call, the model is told, the audit says declined', () => {
      const run = session('decline', () => [CREATE_ADA, READ_GRAPH]);
      expect(run.code).toBe(0);
      expect(run.asked).toHaveLength(1);
      expect(calls(run.memory).map((call) => call.name)).toEqual(['read_graph']);
      expect(run.results[0]).toContain(
        'The call to memory__create_entities was not approved by the user, so it did not run.',
      );
      expect(run.results[1]).toContain('relations');
      expect(run.results[1]).not.toContain('Ada');
      expect(outcomes(run, 'memory__create_entities')).toEqual(['declined']);
    }, 150_000);

    it('ask without a hook: Claude Code -p answers cancel by itself, so the call is declined', () => {
      const run = session('none', () => [CREATE_ADA]);
      expect(run.code).toBe(0);
      expect(run.asked).toEqual([]);
      expect(calls(run.memory)).toEqual([]);
      expect(run.debug).toContain('Elicitation request received in print mode');
      expect(run.results[0]).toContain('was not approved by the user, so it did not run.');
      expect(outcomes(run, 'memory__create_entities')).toEqual(['declined']);
    }, 150_000);
  },
);
