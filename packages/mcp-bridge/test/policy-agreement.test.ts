// One policy language for `toolfence-mcp inspect` and `serve`: the same file gives the same verdict
// for every tool of the real `server-filesystem` and `server-everything`, whichever form a rule
// names the tool in (the server's own name, the offered `server__tool`, `server` plus a name), and
// a deny written with the server's own tool name denies in `serve` (it used to run the call).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVERYTHING_ENTRY, FILESYSTEM_ENTRY } from './helpers.js';

const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };
const UNDECIDED = ' (a condition on the arguments could not be evaluated)';

let folder: string;
let files: string;
let config: string;

interface Verdict {
  readonly verdict: string;
  readonly reason?: string;
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-policy-agreement-'));
  files = join(folder, 'files');
  await mkdir(join(files, 'secret'), { recursive: true });
  await writeFile(join(files, 'readme.txt'), 'hello from the project');
  await writeFile(join(files, 'secret', 'key.txt'), 'the secret key');
  await writeFile(join(folder, 'outside.txt'), 'outside the project');
  config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: {
        files: { command: process.execPath, args: [FILESYSTEM_ENTRY, files], namespace: 'fs' },
        everything: { command: process.execPath, args: [EVERYTHING_ENTRY, 'stdio'] },
      },
    }),
  );
});

afterAll(async () => {
  await rm(folder, { recursive: true, force: true });
});

function run(args: readonly string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: ENV,
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => {
      out += String(chunk);
    });
    child.stderr.on('data', (chunk) => {
      err += String(chunk);
    });
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, out, err }));
  });
}

async function writePolicy(name: string, policy: unknown): Promise<string> {
  const path = join(folder, name);
  await writeFile(path, JSON.stringify(policy));
  return path;
}

/** `inspect --json` of one configured server: offered name → verdict. */
async function inspectVerdicts(
  policy: string,
  server: string,
  namespace: string,
  command: readonly string[],
): Promise<Map<string, Verdict>> {
  const result = await run([
    'inspect',
    '--json',
    '--policy',
    policy,
    '--server',
    server,
    ...(namespace === server ? [] : ['--namespace', namespace]),
    '--',
    ...command,
  ]);
  expect(result.code, result.err).toBe(0);
  const report = JSON.parse(result.out) as {
    tools: { name: string; offeredName: string; policy: Verdict }[];
  };
  return new Map(report.tools.map((tool) => [tool.offeredName, tool.policy]));
}

/** Arguments that pass a listed input schema: each required property with a plain value. */
function sample(schema: Record<string, unknown> | undefined, path: string): unknown {
  if (schema === undefined) return path;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  if ('const' in schema) return schema.const;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const options = schema[key];
    if (Array.isArray(options)) return sample(options[0] as Record<string, unknown>, path);
  }
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'number':
    case 'integer':
      return typeof schema.minimum === 'number' ? schema.minimum : 1;
    case 'boolean':
      return false;
    case 'array': {
      const count = typeof schema.minItems === 'number' ? schema.minItems : 1;
      return Array.from({ length: count }, () =>
        sample(schema.items as Record<string, unknown> | undefined, path),
      );
    }
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
      const required = (schema.required ?? []) as string[];
      return Object.fromEntries(required.map((name) => [name, sample(properties[name], path)]));
    }
    default:
      return path;
  }
}

const text = (result: unknown) =>
  ((result as { content?: { text?: string }[] }).content ?? [])
    .map((block) => block.text ?? '')
    .join('');

/** Starts `serve` as a client's child process; the client declines every approval it is asked. */
async function serve(policy: string): Promise<{
  client: Client;
  asked: string[];
  stderr: () => string;
}> {
  const asked: string[] = [];
  const client = new Client(
    { name: 'policy-agreement', version: '1.0.0' },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler('elicitation/create', async (request) => {
    asked.push(String(request.params.message));
    return { action: 'decline' };
  });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'serve', '--config', config, '--policy', policy],
    env: ENV,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => {
    stderr += String(chunk);
  });
  await client.connect(transport);
  return { client, asked, stderr: () => stderr };
}

/** The verdict `serve` gave one call, as the client sees it. */
async function serveVerdict(
  client: Client,
  asked: string[],
  name: string,
  args: unknown,
): Promise<Verdict> {
  const before = asked.length;
  const result = await client.callTool({ name, arguments: args as Record<string, unknown> });
  if (asked.length > before) {
    const reason = /^Why asked: (.*)\.$/m.exec(asked[asked.length - 1] as string)?.[1];
    return { verdict: 'ask', ...(reason === undefined ? {} : { reason }) };
  }
  const denied = /denied by the gateway's policy \((.*)\), so it did not run/.exec(text(result));
  if (denied !== null) return { verdict: 'deny', reason: denied[1] as string };
  expect(text(result), name).not.toMatch(/invalid|did not run|failed before/i);
  return { verdict: 'allow' };
}

describe('inspect and serve read a policy file the same way', () => {
  it('give the same verdict for every tool of server-filesystem and server-everything', async () => {
    const policy = await writePolicy('agreement.json', {
      kind: 'rules',
      // The flow guard raises a verdict by what the session read before (every tool is called in
      // one session here); this test compares the policy's own verdicts, so it is off.
      flow: { enabled: false },
      rules: [
        { tool: 'read_text_file', decision: 'deny', reason: 'own name, any server' },
        { tool: 'fs__write_*', decision: 'deny', reason: 'offered name glob' },
        { server: 'files', tool: 'list_allowed_directories', decision: 'allow' },
        { server: 'files', tool: 'list_*', decision: 'ask', reason: 'server and own glob' },
        { tool: 'everything__echo', decision: 'allow' },
        { server: 'every*', tool: 'get-*', decision: 'deny', reason: 'server glob' },
        { tool: 'toggle-*', decision: 'ask', reason: 'own-name glob' },
        { tool: '*_file', decision: 'ask', reason: 'own-name glob in any server' },
        {
          tool: 'read_multiple_files',
          when: { paths: { pathUnder: files } },
          decision: 'deny',
          reason: 'conditional deny',
        },
        {
          tool: 'search_files',
          when: { path: { pathUnder: '/nowhere' } },
          decision: 'allow',
        },
        { server: 'everything', tool: 'trigger-*', decision: 'ask', reason: 'server, own name' },
      ],
      default: 'deny',
    });
    const expected = new Map([
      ...(await inspectVerdicts(policy, 'files', 'fs', [
        process.execPath,
        FILESYSTEM_ENTRY,
        files,
      ])),
      ...(await inspectVerdicts(policy, 'everything', 'everything', [
        process.execPath,
        EVERYTHING_ENTRY,
        'stdio',
      ])),
    ]);
    // Every form of rule decided some tool, and all three verdicts occur.
    const verdicts = [...expected.values()];
    for (const verdict of ['allow', 'ask', 'deny']) {
      expect(verdicts.map((item) => item.verdict)).toContain(verdict);
    }
    for (const reason of [
      'own name, any server',
      'offered name glob',
      'server and own glob',
      'server glob',
      'own-name glob',
      'own-name glob in any server',
      `conditional deny${UNDECIDED}`,
      'server, own name',
      'no rule matched',
    ]) {
      expect(verdicts.map((item) => item.reason)).toContain(reason);
    }
    const allowed = [...expected].filter(([, item]) => item.verdict === 'allow').map(([n]) => n);
    // Only harmless tools run.
    expect(allowed.sort()).toEqual(['everything__echo', 'fs__list_allowed_directories']);

    const { client, asked } = await serve(policy);
    try {
      const listed = (await client.listTools()).tools;
      // The gateway declares roots to its upstreams (inspect does not), so server-everything
      // offers it one tool more: get-roots-list.
      expect(
        listed
          .map((tool) => tool.name)
          .filter((name) => !expected.has(name))
          .sort(),
      ).toEqual(['everything__get-roots-list']);
      expect(
        listed
          .map((tool) => tool.name)
          .filter((name) => expected.has(name))
          .sort(),
      ).toEqual([...expected.keys()].sort());
      const path = join(files, 'readme.txt');
      for (const tool of listed.filter((item) => expected.has(item.name))) {
        const args = sample(tool.inputSchema as Record<string, unknown>, path);
        const seen = await serveVerdict(client, asked, tool.name, args);
        const wanted = expected.get(tool.name) as Verdict;
        // serve has the arguments: a condition inspect could not evaluate is decided there.
        expect(
          {
            verdict: seen.verdict,
            reason: seen.verdict === 'allow' ? undefined : seen.reason,
          },
          tool.name,
        ).toEqual({
          verdict: wanted.verdict,
          reason: wanted.verdict === 'allow' ? undefined : wanted.reason?.replace(UNDECIDED, ''),
        });
      }
    } finally {
      await client.close();
    }
  }, 120_000);
});

describe('serve enforces rules written with the server tool name', () => {
  it('denies by own name and by path condition, shows the reason, and warns of a rule that matches nothing', async () => {
    const secret = join(files, 'secret');
    const policy = await writePolicy('own-name.json', {
      kind: 'rules',
      rules: [
        // A newline becomes a space and an invisible character is shown escaped.
        { tool: 'write_file', decision: 'deny', reason: 'the model does not\nwrite files\u200b' },
        {
          tool: 'read_text_file',
          when: { path: { pathUnder: secret } },
          decision: 'deny',
          reason: 'secrets stay local',
        },
        { tool: 'delete_*', decision: 'deny' },
      ],
      default: 'allow',
    });
    const { client, stderr } = await serve(policy);
    try {
      const target = join(files, 'written.txt');
      const write = await client.callTool({
        name: 'fs__write_file',
        arguments: { path: target, content: 'nope' },
      });
      expect(write.isError).toBe(true);
      expect(text(write)).toContain('(the model does not write files\\u{200b})');
      await expect(readFile(target)).rejects.toMatchObject({ code: 'ENOENT' });
      for (const path of [
        join(secret, 'key.txt'),
        `${files}/other/../secret/key.txt`,
        `${files}//secret//key.txt`,
      ]) {
        const read = await client.callTool({ name: 'fs__read_text_file', arguments: { path } });
        expect(read.isError, path).toBe(true);
        expect(text(read), path).toContain('(secrets stay local)');
        expect(text(read), path).not.toContain('the secret key');
      }
      const allowed = await client.callTool({
        name: 'fs__read_text_file',
        arguments: { path: join(files, 'readme.txt') },
      });
      expect(text(allowed)).toContain('hello from the project');
      expect(stderr()).toMatch(/policy rules\[2\] \(tool "delete_\*"\) matches no offered tool/);
      // A reload (the config file changed) warns again.
      await writeFile(config, `${await readFile(config, 'utf8')}\n`);
      const deadline = Date.now() + 20_000;
      while (stderr().match(/rules\[2\]/g)?.length !== 2 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(stderr()).toMatch(/reloaded \(config changed\)[\s\S]*policy rules\[2\]/);
    } finally {
      await client.close();
    }
  }, 60_000);

  it.each([
    ['serve', ['serve', '--config', 'CONFIG', '--policy', 'POLICY'], 1],
    ['inspect', ['inspect', '--policy', 'POLICY', '--', process.execPath, '-e', ''], 2],
  ])(
    '%s refuses an unknown rule key with POLICY_FILE_INVALID, naming the key',
    async (_c, args, code) => {
      const policy = await writePolicy('unknown-key.json', {
        kind: 'rules',
        rules: [{ tool: 'read_text_file', decison: 'deny' }],
      });
      const result = await run(
        args.map((arg) => (arg === 'CONFIG' ? config : arg === 'POLICY' ? policy : arg)),
      );
      expect(result.code).toBe(code);
      expect(result.err).toContain(
        'rules[0] has an unknown key "decison" (allowed: $comment, tool, server, when, decision, reason, principal)',
      );
      expect(result.err).toContain('(POLICY_FILE_INVALID)');
      expect(result.err).not.toContain('INSPECT_USAGE');
    },
    30_000,
  );
});
