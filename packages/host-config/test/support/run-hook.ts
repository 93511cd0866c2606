import { spawn } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** Absolute path of the shipped hook script (the file the tests run). */
export const HOOK_PATH: string = fileURLToPath(
  new URL('../../hook/toolfence_attachment_substitution.cjs', import.meta.url),
);

export interface HookRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `node <script>` with `stdin` written in full, as clients do, and collects everything
 * (`node`: another Node.js executable; default the one running the tests).
 */
export function runHook(
  stdin: string | Buffer,
  options: {
    env?: Record<string, string>;
    script?: string;
    timeoutMs?: number;
    node?: string;
    /** Node flags before the script (for example `--import` of a preload). */
    nodeArgs?: readonly string[];
  } = {},
): Promise<HookRun> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string | undefined> = { ...process.env };
    for (const key of Object.keys(env)) if (key.startsWith('TOOLFENCE_HOOK_')) delete env[key];
    const child = spawn(
      options.node ?? process.execPath,
      [...(options.nodeArgs ?? []), options.script ?? HOOK_PATH],
      { env: { ...env, ...options.env }, stdio: ['pipe', 'pipe', 'pipe'] },
    );
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    // On time out the hook is killed, and the run fails once it exited (never while it runs).
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, options.timeoutMs ?? 8000);
    child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) {
        reject(new Error('hook did not finish in time'));
        return;
      }
      resolve({
        code,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
      });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(stdin);
  });
}

/** Real stdin shapes of each client's pre-tool-use event (from their docs and source). */
export const stdinShapes = {
  'claude-code': (toolInput: unknown) => ({
    session_id: 'abc123',
    prompt_id: '550e8400-e29b-41d4-a716-446655440000',
    transcript_path: '/home/user/.claude/projects/demo/transcript.jsonl',
    cwd: '/home/user/my-project',
    permission_mode: 'default',
    hook_event_name: 'PreToolUse',
    tool_name: 'mcp__files__upload',
    tool_input: toolInput,
    tool_use_id: 'toolu_01ABC123',
  }),
  codex: (toolInput: unknown) => ({
    session_id: 'session-1',
    turn_id: 'turn-1',
    transcript_path: null,
    cwd: '/repo',
    hook_event_name: 'PreToolUse',
    model: 'gpt-5-codex',
    permission_mode: 'default',
    tool_name: 'mcp__files__upload',
    tool_input: toolInput,
    tool_use_id: 'call-1',
  }),
  cursor: (toolInput: unknown) => ({
    conversation_id: 'cursor-conv-001',
    generation_id: 'cursor-gen-001',
    model: 'gpt-5',
    hook_event_name: 'preToolUse',
    cursor_version: '2.4.1',
    workspace_roots: ['/tmp/cursor-project'],
    user_email: null,
    transcript_path: '/tmp/cursor-transcripts/cursor-conv-001.jsonl',
    tool_name: 'MCP:upload',
    tool_input: toolInput,
    tool_use_id: 'cursor-tool-001',
    cwd: '/tmp/cursor-project',
  }),
  vscode: (toolInput: unknown) => ({
    timestamp: '2026-02-09T10:30:00.000Z',
    cwd: '/path/to/workspace',
    sessionId: 'session-identifier',
    hookEventName: 'PreToolUse',
    transcript_path: '/path/to/transcript.json',
    tool_name: 'mcp_files_upload',
    tool_input: toolInput,
    tool_use_id: 'tool-123',
  }),
} as const;

/** Client stdin as the clients write it: one JSON document and a newline. */
export function stdinFor(client: keyof typeof stdinShapes, toolInput: unknown): string {
  return `${JSON.stringify(stdinShapes[client](toolInput))}\n`;
}

/**
 * A file:// URL for an absolute path, percent-encoding what needs it; on Windows the drive-letter
 * form (`file:///C:/Users/...`).
 */
export function fileUrl(path: string): string {
  if (process.platform === 'win32') return pathToFileURL(path).href;
  return `file://${path.split('/').map(encodeURIComponent).join('/')}`;
}
