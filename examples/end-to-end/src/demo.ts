/**
 * The whole toolfence story, locally: two real MCP servers bridged into one ToolRegistry with a
 * RiskPolicy, the real attachment hook run the way Claude Code runs it, a denied destructive call,
 * an approved write, a call without the hook, an oversized reply stopped by the record limit, and
 * the gateway (`toolfence-mcp serve`) in front of both servers for any MCP client: allow, deny,
 * an approval asked through elicitation, and a rug-pulled tool hidden after a reload. Everything runs on 127.0.0.1 and in a temporary folder.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { HOOK_SCRIPT_URL } from '@toolfence/host-config';
import { bridgeTools, McpClient } from '@toolfence/mcp-bridge';
import { heuristicContract } from '@toolfence/tool-contract';
import {
  createToolContext,
  type JsonObject,
  PermissionDeniedError,
  RiskPolicy,
  resolveEffect,
  ToolRegistry,
  type ToolResult,
} from '@toolfence/tools';
import { runGatewayDemo } from './gateway-demo.ts';

/** Where the demo writes its transcript. */
export interface DemoOutput {
  /** Receives one transcript line at a time. */
  readonly line: (text: string) => void;
  /** Colour the transcript with ANSI escapes (for a TTY). */
  readonly color: boolean;
}

const require = createRequire(import.meta.url);
const toolkitMain = fileURLToPath(
  new URL('./main.ts', import.meta.resolve('@toolfence-examples/toolkit-server')),
);
const everythingEntry = join(
  dirname(require.resolve('@modelcontextprotocol/server-everything/package.json')),
  'dist',
  'index.js',
);
const tsxLoader = import.meta.resolve('tsx');

/** Starts the example toolkit over Streamable HTTP on 127.0.0.1 and returns its URL. */
async function startToolkit(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', tsxLoader, toolkitMain, '--http'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout! });
  for await (const text of lines) {
    const match = /^listening (http:\/\/127\.0\.0\.1:\d+\/mcp)$/.exec(text);
    if (match) {
      lines.close();
      return { url: match[1]!, child };
    }
  }
  throw new Error('the toolkit server exited before listening');
}

/** Runs the real hook script as Claude Code does: PreToolUse JSON on stdin, decision on stdout. */
async function runHookLikeClaudeCode(toolName: string, toolInput: JsonObject): Promise<JsonObject> {
  const child = spawn(process.execPath, [fileURLToPath(HOOK_SCRIPT_URL)], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => chunks.push(chunk));
  child.stdin.end(
    JSON.stringify({
      session_id: 'demo-session',
      transcript_path: join(tmpdir(), 'demo-transcript.jsonl'),
      cwd: process.cwd(),
      permission_mode: 'default',
      hook_event_name: 'PreToolUse',
      tool_name: toolName,
      tool_input: toolInput,
    }),
  );
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  if (code !== 0) throw new Error(`the hook exited with ${code}`);
  const output = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  return output.hookSpecificOutput.updatedInput as JsonObject;
}

function parseText(result: ToolResult): unknown {
  const block = result.content[0];
  if (block?.type === 'text') {
    try {
      return JSON.parse(block.text);
    } catch {
      return block.text;
    }
  }
  return block?.type === 'json' ? block.json : undefined;
}

/** Runs the demo, writing its transcript line by line; resolves when everything is shut down. */
export async function runDemo(output: DemoOutput): Promise<void> {
  const paint = (code: string) => (text: string) =>
    output.color ? `\u001b[${code}m${text}\u001b[0m` : text;
  const bold = paint('1');
  const green = paint('32');
  const red = paint('31');
  const yellow = paint('33');
  const dim = paint('2');
  const say = output.line;
  const step = (number: number, text: string) => say(`\n${bold(`[${number}]`)} ${bold(text)}`);

  const temp = await mkdtemp(join(tmpdir(), 'toolfence-demo-'));
  const toolkit = await startToolkit();
  const toolkitClient = new McpClient({
    url: toolkit.url,
    clientName: 'toolfence-demo',
    // Plain HTTP is refused except to a loopback address the host approves; this demo approves
    // exactly its own server on 127.0.0.1.
    allowNonPublic: (target, address) =>
      target.hostname === '127.0.0.1' && address.range === 'loopback',
    // Every record from the server is bounded; 1 MiB here so the demo can show the limit.
    maxRecordBytes: 1024 * 1024,
  });
  const everythingClient = new McpClient({
    command: [process.execPath, everythingEntry, 'stdio'],
    clientName: 'toolfence-demo',
  });
  let registry: ToolRegistry | undefined;
  try {
    say(bold('toolfence end-to-end demo'));
    step(1, 'Example toolkit (SDK server with declared contracts) on Streamable HTTP');
    say(`    listening at ${toolkit.url}`);
    step(2, '@modelcontextprotocol/server-everything over stdio');

    const policy = new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } });
    const approvals: string[] = [];
    registry = new ToolRegistry({
      authorizer: policy,
      approval: (request) => {
        const line = `approve ${request.toolName} (${request.reason ?? 'no reason'})? yes`;
        approvals.push(line);
        say(`    ${yellow('approval asked:')} ${line}`);
        return true;
      },
    });
    const bridged = [
      ...(await bridgeTools(toolkitClient, { prefix: 'toolkit' })),
      ...(await bridgeTools(everythingClient, {
        prefix: 'everything',
        allow: ['echo', 'get-sum'],
      })),
    ];
    await registry.registerAll(bridged);
    step(3, `Bridged ${bridged.length} tools into one ToolRegistry with a RiskPolicy`);
    say(dim('    read-only: allow · writes: ask · destructive: deny'));
    const context = createToolContext({ runId: 'demo-run' });
    for (const tool of bridged) {
      const declared = tool.spec.contract;
      const contract = declared ?? heuristicContract(tool.spec.name, tool.spec.description);
      const decision = await policy.authorize({
        toolName: tool.spec.name,
        args: {},
        context,
        spec: tool.spec,
        contract: declared,
        effect: resolveEffect(tool.spec, {}, declared),
      });
      const verdict =
        decision.verdict === 'allow'
          ? green('allow')
          : decision.verdict === 'ask'
            ? yellow('ask')
            : red('deny');
      say(
        `    ${tool.spec.name.padEnd(26)} ${contract.risk.padEnd(21)} ${(declared ? 'declared' : 'heuristic').padEnd(9)} ${verdict}`,
      );
    }

    step(4, 'The real hook substitutes an attachment, as Claude Code runs it');
    const file = join(temp, 'quarterly-report.pdf');
    const bytes = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(48 * 1024, 7)]);
    await writeFile(file, bytes);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    const call = {
      to: 'team@example.com',
      body: 'Q3 report attached.',
      attachments: [{ source: `file://${file}` }],
    };
    say(`    model's call names ${dim(call.attachments[0]!.source)} (${bytes.length} bytes)`);
    const rewritten = await runHookLikeClaudeCode('mcp__toolkit__send_message', call);
    const attachment = (rewritten.attachments as JsonObject[])[0]!;
    say(
      `    hook rewrote it to ${dim(`${String(attachment.source).slice(0, 40)}…`)} (${attachment.mime_type}, ${attachment.filename})`,
    );
    const sent = parseText(await registry.invoke('toolkit__send_message', rewritten, context)) as {
      attachments: { bytes: number; sha256: string }[];
    };
    const received = sent.attachments[0]!;
    const match = received.bytes === bytes.length && received.sha256 === sha256;
    say(`    server received ${received.bytes} bytes, sha256 ${received.sha256.slice(0, 16)}…`);
    say(
      `    ${match ? green('matches the file on disk') : red('DOES NOT MATCH the file on disk')}`,
    );
    if (!match) throw new Error('the server did not receive the file bytes');

    step(5, 'Policy at work');
    try {
      await registry.invoke('toolkit__delete_note', { id: 'roadmap' }, context);
      say(`    ${red('destructive call ran: the policy failed')}`);
      throw new Error('destructive call was not denied');
    } catch (error) {
      if (!PermissionDeniedError.isInstance(error)) throw error;
      say(`    toolkit__delete_note → ${red('denied')} (${error.code}); the server never saw it`);
    }
    const saved = parseText(
      await registry.invoke(
        'toolkit__save_note',
        { id: 'demo', body: 'written after approval' },
        context,
      ),
    );
    say(`    toolkit__save_note → ${green('approved and ran')}: ${JSON.stringify(saved)}`);
    const echoed = await registry.invoke(
      'everything__echo',
      { message: 'hello from toolfence' },
      context,
    );
    say(`    everything__echo → ${JSON.stringify(parseText(echoed))}`);

    say('    without the hook, the same send reaches the server with file:// …');
    const missing = await registry.invoke('toolkit__send_message', call, context);
    const payload = JSON.parse((missing.content[0] as { text: string }).text) as {
      hook_filename?: string;
      protocol_version?: number;
    };
    say(
      `    … and gets the install-or-upgrade payload: isError=${missing.isError === true}, hook ${payload.hook_filename ?? '?'}`,
    );

    step(6, 'An oversized reply is stopped by the record limit');
    const oversized = await registry.invoke(
      'toolkit__export_report',
      { size_bytes: 2 * 1024 * 1024 },
      context,
    );
    const reason = oversized.metadata?.reason;
    if (oversized.isError !== true || reason !== 'response-too-large') {
      throw new Error('the oversized reply was not stopped by the record limit');
    }
    say(
      `    toolkit__export_report (2 MiB reply) → ${red('stopped')} at the 1 MiB record limit (${String(oversized.metadata?.code)}, ${reason})`,
    );
    say(dim(`    the model is told: ${(oversized.content[0] as { text: string }).text}`));
    const after = parseText(
      await registry.invoke('toolkit__search_notes', { query: 'hook' }, context),
    );
    say(`    the next call handshakes again and works: ${JSON.stringify(after)}`);

    step(7, 'The gateway: toolfence-mcp serve in front of both servers, for any MCP client');
    await runGatewayDemo(temp, { say, green, red, yellow, dim });

    step(8, 'Shut down');
    say(
      `    ${approvals.length} approvals asked; closing the registry, both clients and the servers`,
    );
  } finally {
    await registry?.close();
    await Promise.allSettled([toolkitClient.close(), everythingClient.close()]);
    toolkit.child.kill('SIGTERM');
    await rm(temp, { recursive: true, force: true });
  }
  say(green('done'));
}
