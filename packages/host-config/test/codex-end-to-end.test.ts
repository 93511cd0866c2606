import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { getHookStatus, installHook } from '../src/index.js';
import {
  deniedAttachments,
  loopbackNamespaceUnavailable,
  runIsolated,
  uploadsOf,
} from './support/isolated-cli.js';
import { fileUrl } from './support/run-hook.js';

// The real Codex CLI (pinned dev dependency @openai/codex 0.171.0), end to end: a fake model API
// on 127.0.0.1 asks for the `upload` tool of an SDK 1.x stdio server with a file:// attachment,
// the hook installed by our installer rewrites it, and the server gets the file's bytes. Each run
// is in its own network namespace with only loopback up (unshare -n as root); where that is not
// possible the tests are skipped with the reason printed.

const RUNNER = fileURLToPath(new URL('./fixtures/codex-e2e-runner.mjs', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/upload-server.mjs', import.meta.url));

function findCodex(): { path: string } | { reason: string } {
  if (process.platform !== 'linux')
    return { reason: `network namespaces need Linux (${process.platform})` };
  const namespace = loopbackNamespaceUnavailable();
  if (namespace !== undefined) return { reason: namespace };
  try {
    const manifest = createRequire(import.meta.url).resolve('@openai/codex/package.json');
    const path = join(dirname(manifest), 'bin', 'codex.js');
    if (spawnSync(process.execPath, [path, '--version']).status !== 0) {
      return { reason: 'codex --version failed' };
    }
    return { path };
  } catch {
    return { reason: 'the @openai/codex dev dependency is not installed' };
  }
}

const codex = findCodex();
if ('reason' in codex) process.stderr.write(`codex-end-to-end.test.ts skipped: ${codex.reason}\n`);

let home: string;
let codexHome: string;
let uploads: string;

beforeEach(() => {
  home = mkdtempSync(join(tmpdir(), 'toolfence-codex-e2e-'));
  codexHome = join(home, '.codex');
  uploads = join(home, 'uploads.jsonl');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      'model = "fake-model"',
      'model_provider = "fake"',
      'approval_policy = "never"',
      'sandbox_mode = "read-only"',
      '',
      '[model_providers.fake]',
      'name = "fake"',
      'base_url = "http://127.0.0.1:9/v1"',
      'env_key = "FAKE_API_KEY"',
      'wire_api = "responses"',
      '',
      '[mcp_servers.files]',
      `command = ${JSON.stringify(process.execPath)}`,
      `args = [${JSON.stringify(SERVER)}, "stdio", "default"]`,
      // The hook's allow does not approve the MCP call: with approval_policy = "never" the tools
      // must be approved here.
      'default_tools_approval_mode = "approve"',
      'required = true',
      'startup_timeout_sec = 30',
      `env = { UPLOAD_LOG = ${JSON.stringify(uploads)} }`,
      '',
    ].join('\n'),
  );
});

afterEach(() => {
  rmSync(home, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  /** Text of the tool result Codex sent back to the model. */
  readonly toolOutput: string;
  /** Everything Codex sent to the model, as text. */
  readonly modelSaw: string;
  /** Schemes of the sources that reached the MCP server, per call. */
  readonly serverGot: string[][];
}

function runCodex(source: string): Run {
  const path = 'path' in codex ? codex.path : '';
  const summary = runIsolated<{
    code: number | null;
    requests: { input?: { type?: string; output?: unknown }[] }[];
  }>(RUNNER, {
    E2E_CODEX: path,
    E2E_CODEX_HOME: codexHome,
    E2E_HOME: home,
    E2E_SOURCE: source,
  });
  const outputs = summary.requests.flatMap((request) =>
    (request.input ?? []).filter((item) => item.type === 'function_call_output'),
  );
  return {
    code: summary.code,
    toolOutput: JSON.stringify(outputs.map((item) => item.output)),
    modelSaw: JSON.stringify(summary.requests),
    serverGot: uploadsOf(uploads),
  };
}

describe.skipIf('reason' in codex)(
  'Codex 0.171.0 end to end (fake model, SDK stdio server)',
  () => {
    it('rewrites a trusted hook call: the server gets the bytes, the model only the file:// form', () => {
      installHook({ client: 'codex', home, codexHome, trustCodexHook: true });
      const file = join(home, 'report.txt');
      writeFileSync(file, 'quarterly numbers\n');
      const run = runCodex(fileUrl(file));
      expect(run.code).toBe(0);
      expect(run.serverGot).toEqual([['data']]);
      const sha256 = createHash('sha256').update('quarterly numbers\n').digest('hex');
      expect(run.toolOutput).toContain(sha256);
      expect(run.modelSaw).toContain(fileUrl(file));
      expect(run.modelSaw).not.toContain(Buffer.from('quarterly numbers\n').toString('base64'));
    }, 150_000);

    it('skips an untrusted hook silently (the server gets file:// and answers with the payload); status says so', () => {
      installHook({ client: 'codex', home, codexHome });
      expect(getHookStatus({ client: 'codex', home, codexHome }).working).toBe(false);
      const file = join(home, 'report.txt');
      writeFileSync(file, 'x');
      const run = runCodex(fileUrl(file));
      expect(run.serverGot).toEqual([['file']]);
      expect(run.toolOutput).toContain('attachment_hook_missing');
    }, 150_000);

    it.each(deniedAttachments(() => home))(
      'denies %s: the model gets the reason, the tool is not called',
      (_name, source, setup, code) => {
        const allowed = join(home, 'allowed');
        mkdirSync(allowed);
        installHook({
          client: 'codex',
          home,
          codexHome,
          trustCodexHook: true,
          ...('allowed' in setup ? { allowedRoots: [allowed] } : {}),
          ...('budget' in setup ? { toolkitBudgets: { files: setup.budget } } : {}),
        });
        const run = runCodex(source());
        expect(run.serverGot).toEqual([]);
        expect(run.toolOutput).toContain(`toolfence attachment hook: ${code}: `);
      },
      150_000,
    );

    it('delivers a file inside the allowlist', () => {
      const allowed = join(home, 'allowed');
      mkdirSync(allowed);
      writeFileSync(join(allowed, 'in.txt'), 'inside\n');
      installHook({
        client: 'codex',
        home,
        codexHome,
        trustCodexHook: true,
        allowedRoots: [allowed],
      });
      const run = runCodex(fileUrl(join(allowed, 'in.txt')));
      expect(run.serverGot).toEqual([['data']]);
      expect(run.toolOutput).toContain(createHash('sha256').update('inside\n').digest('hex'));
    }, 150_000);

    it('delivers a file just under the toolkit budget', () => {
      installHook({
        client: 'codex',
        home,
        codexHome,
        trustCodexHook: true,
        toolkitBudgets: { files: 1024 },
      });
      writeFileSync(join(home, 'fits.bin'), Buffer.alloc(1024, 7));
      const run = runCodex(fileUrl(join(home, 'fits.bin')));
      expect(run.serverGot).toEqual([['data']]);
      expect(run.toolOutput).toContain(
        createHash('sha256').update(Buffer.alloc(1024, 7)).digest('hex'),
      );
    }, 150_000);
  },
);
