import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-cli-errors-'));
});
afterEach(async () => {
  await chmod(folder, 0o700).catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function cli(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(args, {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: {},
    cwd: folder,
    stdio: { stdin: new PassThrough(), stdout: new PassThrough() },
    stopped: Promise.resolve(),
  });
  return { code, out: out.join(''), err: err.join('') };
}

describe('serve and pin: errors that say where and why (issue 36, smaller)', () => {
  it.each([
    [
      'a missing comma',
      '{\n  "mcpServers": {}\n  "gateway": {}\n}',
      'line 3, column 3: comma expected',
    ],
    ['a trailing comma', '{\n  "mcpServers": {},\n}', 'line 3, column 1: property name expected'],
    ['an empty file', '', 'line 1, column 1: value expected'],
    ['a comment', '// servers\n{"mcpServers": {}}', 'line 1, column 1: invalid comment token'],
  ])(
    'a config file with %s names the file, the line and the column',
    async (_label, text, where) => {
      const path = join(folder, 'toolfence.json');
      await writeFile(path, text);
      for (const command of [['serve'], ['pin', '--show']]) {
        const result = await cli([...command, '--config', path]);
        expect(result.code).toBe(1);
        expect(result.err).toContain(`${path}: is not valid JSON (${where})`);
        expect(result.err).toContain('(GATEWAY_CONFIG)');
      }
    },
  );

  it('refuses a server name the gateway cannot offer tools under, at parse time, saying what is accepted', async () => {
    // "a_" + "__" + "x" would read as "a" + "__" + "_x": the name is refused before any start.
    const path = join(folder, 'toolfence.json');
    await writeFile(
      path,
      JSON.stringify({ mcpServers: { a_: { command: process.execPath, args: ['-e', ''] } } }),
    );
    for (const command of [['serve'], ['pin', '--show']]) {
      const result = await cli([...command, '--config', path]);
      expect(result.code).toBe(1);
      expect(result.err).toContain(
        'the server name "a_" cannot be used: a server name is 1-24 of letters, digits, "-" and "_", starting with a letter or digit, with no "__" and no "_" at the end',
      );
      expect(result.err).toContain('(GATEWAY_CONFIG)');
    }
  });

  type Arrange = (path: string) => Promise<void>;
  const unreadable: [string, Arrange, string][] =
    process.getuid?.() === 0
      ? []
      : [
          [
            'unreadable',
            async (path) => {
              await writeFile(path, '{}');
              await chmod(path, 0o000);
            },
            'EACCES',
          ],
        ];
  const rows: [string, Arrange, string][] = [
    ['missing', async () => undefined, 'ENOENT'],
    ...unreadable,
  ];
  it.each(rows)('a %s config file names its path', async (_label, arrange, errno) => {
    const path = join(folder, 'toolfence.json');
    await arrange(path);
    const result = await cli(['serve', '--config', path]);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`Cannot read the config file ${path} (${errno})`);
  });

  it.each([
    ['a policy file that is not JSON', 'not json', 'not valid JSON'],
    ['a policy of an unknown kind', '{"kind":"nope"}', '"kind" must be'],
  ])("serve refuses %s with its own code and the file's path", async (_label, policy, message) => {
    await writeFile(join(folder, 'toolfence.json'), '{"mcpServers":{}}');
    await writeFile(join(folder, 'policy.json'), policy);
    const result = await cli(['serve', '--config', 'toolfence.json', '--policy', 'policy.json']);
    expect(result.code).toBe(1);
    expect(result.err).toContain('(POLICY_FILE_INVALID)');
    expect(result.err).not.toContain('INSPECT_USAGE');
    expect(result.err).toContain(join(folder, 'policy.json'));
    expect(result.err).toContain(message);
  });

  it('serve refuses a missing policy file naming it', async () => {
    await writeFile(join(folder, 'toolfence.json'), '{"mcpServers":{}}');
    const result = await cli(['serve', '--config', 'toolfence.json', '--policy', 'nope.json']);
    expect(result.code).toBe(1);
    expect(result.err).toContain(`--policy ${join(folder, 'nope.json')}`);
    expect(result.err).toContain('(POLICY_FILE_INVALID)');
  });

  it.each([
    ['--observe', '{"mcpServers":{}}', ['--observe']],
    ['gateway.observe in the config', '{"mcpServers":{},"gateway":{"observe":true}}', []],
  ])(
    'serve with %s prints a banner on stderr saying enforcement is off',
    async (_label, config, flags) => {
      await writeFile(join(folder, 'toolfence.json'), config);
      const result = await cli(['serve', '--config', 'toolfence.json', ...flags]);
      expect(result.code).toBe(0);
      expect(result.err).toContain('OBSERVE MODE: enforcement is OFF');
    },
  );

  it('serve without observe prints no such banner', async () => {
    await writeFile(join(folder, 'toolfence.json'), '{"mcpServers":{}}');
    const result = await cli(['serve', '--config', 'toolfence.json']);
    expect(result.code).toBe(0);
    expect(result.err).not.toContain('OBSERVE');
  });
});

// Every command reads its flags the same way (cli-io.ts): a flag without its value, or followed by
// another flag, and an unknown flag are usage errors (exit 2) that name the flag, and text that
// does not look like a flag is never echoed.
describe('bad flags of serve, pin, audit, wrap and unwrap', () => {
  it.each<[string, string[], RegExp]>([
    ['serve --config without its value', ['serve', '--config'], /--config needs a value/],
    [
      'serve --policy followed by a flag',
      ['serve', '--policy', '--observe'],
      /--policy needs a value/,
    ],
    ['serve --http without its value', ['serve', '--http'], /--http needs a value/],
    ['pin --accept without its value', ['pin', '--accept'], /--accept needs a value/],
    ['serve with an unknown flag', ['serve', '--frobnicate'], /unknown option --frobnicate/],
    [
      'audit verify with an unknown flag',
      ['audit', 'verify', '--frobnicate'],
      /unknown option --frobnicate/,
    ],
    ['wrap --client without its value', ['wrap', '--client'], /--client needs a value/],
    [
      'wrap --file followed by a flag',
      ['wrap', '--client', 'claude', '--file', '--merge'],
      /--file needs a value/,
    ],
    [
      'unwrap --file without its value',
      ['unwrap', '--client', 'claude', '--file'],
      /--file needs a value/,
    ],
    [
      'wrap with an unknown flag',
      ['wrap', '--client', 'claude', '--frobnicate'],
      /unknown option --frobnicate/,
    ],
    [
      'unwrap with a wrap-only flag',
      ['unwrap', '--client', 'claude', '--merge'],
      /unknown option --merge/,
    ],
  ])('%s', async (_label, args, message) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(message);
  });

  it.each<[string, string[]]>([
    ['serve', ['serve', '--\u001b[31mred']],
    ['wrap', ['wrap', '--client', 'claude', 'not a flag; rm -rf ~']],
    ['audit verify', ['audit', 'verify', '--log', 'a.jsonl', '--\u202eevil']],
  ])('%s does not echo an unknown word that is not flag-shaped', async (_label, args) => {
    const result = await cli(args);
    expect(result.code).toBe(2);
    expect(result.err).toMatch(/unknown option/);
    expect(result.err).not.toContain(args.at(-1) as string);
  });
});
