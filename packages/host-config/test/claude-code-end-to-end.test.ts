import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { installHook, uninstallHook } from '../src/index.js';
import {
  deniedAttachments,
  loopbackNamespaceUnavailable,
  runIsolated,
  uploadsOf,
} from './support/isolated-cli.js';
import { fileUrl } from './support/run-hook.js';

// The real Claude Code CLI (pinned dev dependency @anthropic-ai/claude-code 2.1.197; its native
// binary comes from the platform package, no install script runs), end to end: `claude -p`
// against a fake Anthropic API on 127.0.0.1 calls an SDK 1.x stdio server's tool with a file://
// attachment, and the hook installed by our installer rewrites it. Each run is in its own network
// namespace with only loopback up; where that is not possible the tests are skipped with the
// reason printed.

const RUNNER = fileURLToPath(new URL('./fixtures/claude-e2e-runner.mjs', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/upload-server.mjs', import.meta.url));

function findClaude(): { path: string } | { reason: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return {
      reason: `the test runs the linux-x64 binary; this is ${process.platform}-${process.arch}`,
    };
  }
  const namespace = loopbackNamespaceUnavailable();
  if (namespace !== undefined) return { reason: namespace };
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
  process.stderr.write(`claude-code-end-to-end.test.ts skipped: ${claude.reason}\n`);

let home: string;
let uploads: string;
let mcpConfig: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-claude-e2e-'));
  uploads = join(home, 'uploads.jsonl');
  mcpConfig = join(home, 'mcp.json');
  writeFileSync(
    mcpConfig,
    JSON.stringify({
      mcpServers: {
        files: {
          command: process.execPath,
          args: [SERVER, 'stdio', 'default'],
          env: { UPLOAD_LOG: uploads },
        },
      },
    }),
  );
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  /** The tool results Claude Code sent back to the model, as text. */
  readonly toolOutput: string;
  /** Everything Claude Code sent to the model, as text. */
  readonly modelSaw: string;
  /** Schemes of the sources that reached the MCP server, per call. */
  readonly serverGot: string[][];
}

function runClaude(source: string): Run {
  const path = 'path' in claude ? claude.path : '';
  const summary = runIsolated<{
    code: number | null;
    requests: { messages?: { content?: unknown }[] }[];
  }>(RUNNER, {
    E2E_CLAUDE: path,
    E2E_HOME: home,
    E2E_SOURCE: source,
    E2E_MCP_CONFIG: mcpConfig,
  });
  const results = summary.requests.flatMap((request) =>
    (request.messages ?? []).flatMap((message) =>
      Array.isArray(message.content)
        ? message.content.filter((block: { type?: string }) => block.type === 'tool_result')
        : [],
    ),
  );
  return {
    code: summary.code,
    toolOutput: JSON.stringify(results),
    modelSaw: JSON.stringify(summary.requests),
    serverGot: uploadsOf(uploads),
  };
}

/** The text of every session transcript Claude Code wrote under the throwaway HOME. */
function transcripts(): string {
  const root = join(home, '.claude', 'projects');
  if (!existsSync(root)) return '';
  return readdirSync(root, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.jsonl'))
    .map((name) => readFileSync(join(root, name), 'utf8'))
    .join('\n');
}

describe.skipIf('reason' in claude)(
  'Claude Code 2.1.197 end to end (fake model, SDK stdio server)',
  () => {
    it('rewrites the call: the server gets the bytes, the model only the file:// form', () => {
      installHook({ client: 'claude-code', home });
      const file = join(home, 'report.txt');
      writeFileSync(file, 'quarterly numbers\n');
      const run = runClaude(fileUrl(file));
      expect(run.code).toBe(0);
      expect(run.serverGot).toEqual([['data']]);
      expect(run.toolOutput).toContain(
        createHash('sha256').update('quarterly numbers\n').digest('hex'),
      );
      const base64 = Buffer.from('quarterly numbers\n').toString('base64');
      expect(run.modelSaw).toContain(fileUrl(file));
      expect(run.modelSaw).not.toContain(base64);
      // Where the bytes end up (README, security model): the session transcript keeps them.
      expect(transcripts()).toContain(base64);
    }, 150_000);

    it('without the hook the server gets file:// and answers with the missing-hook payload', () => {
      installHook({ client: 'claude-code', home });
      uninstallHook({ client: 'claude-code', home });
      const file = join(home, 'report.txt');
      writeFileSync(file, 'x');
      const run = runClaude(fileUrl(file));
      expect(run.serverGot).toEqual([['file']]);
      expect(run.toolOutput).toContain('attachment_hook_missing');
    }, 150_000);

    it.each(deniedAttachments(() => home))(
      'denies %s: the model gets the reason, the tool is not called',
      (_name, source, setup, code) => {
        const allowed = join(home, 'allowed');
        mkdirSync(allowed);
        installHook({
          client: 'claude-code',
          home,
          ...('allowed' in setup ? { allowedRoots: [allowed] } : {}),
          ...('budget' in setup ? { toolkitBudgets: { files: setup.budget } } : {}),
        });
        const run = runClaude(source());
        expect(run.serverGot).toEqual([]);
        expect(run.toolOutput).toContain(`toolfence attachment hook: ${code}: `);
      },
      150_000,
    );

    it('delivers a file inside the allowlist', () => {
      const allowed = join(home, 'allowed');
      mkdirSync(allowed);
      writeFileSync(join(allowed, 'in.txt'), 'inside\n');
      installHook({ client: 'claude-code', home, allowedRoots: [allowed] });
      const run = runClaude(fileUrl(join(allowed, 'in.txt')));
      expect(run.serverGot).toEqual([['data']]);
      expect(run.toolOutput).toContain(createHash('sha256').update('inside\n').digest('hex'));
    }, 150_000);

    it('delivers a file just under the toolkit budget', () => {
      installHook({ client: 'claude-code', home, toolkitBudgets: { files: 1024 } });
      writeFileSync(join(home, 'fits.bin'), Buffer.alloc(1024, 7));
      const run = runClaude(fileUrl(join(home, 'fits.bin')));
      expect(run.serverGot).toEqual([['data']]);
      expect(run.toolOutput).toContain(
        createHash('sha256').update(Buffer.alloc(1024, 7)).digest('hex'),
      );
    }, 150_000);
  },
);
