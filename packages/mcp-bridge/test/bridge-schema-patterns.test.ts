// A hostile server's schema `pattern`s run in linear time: `^(a+)+$` on 40 characters and a
// mismatch (hours for a backtracking engine) is answered at once, for the arguments (the
// registry's check and the bridge's) and for the structured result; a pattern the linear engine
// cannot run (a lookahead) is not enforced and is reported once per schema. No timing is
// asserted: the test's time limit is the bound, and a regression stalls the whole process.
import { fileURLToPath } from 'node:url';
import {
  AjvSchemaValidator,
  AllowAllAuthorizer,
  createToolContext,
  ToolRegistry,
} from '@toolfence/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bridgeTools, McpClient } from '../src/index.js';

const SERVER = fileURLToPath(new URL('./fixtures/hostile-pattern-server.mjs', import.meta.url));
const LONG = `${'a'.repeat(40)}!`;
const context = createToolContext({ runId: 'run-patterns' });

describe('bridgeTools with a server whose schemas carry hostile patterns', () => {
  const warnings: Array<readonly [string, unknown]> = [];
  let client: McpClient;
  beforeAll(() => {
    client = new McpClient({
      command: [process.execPath, SERVER],
      logger: { warn: (message, details) => warnings.push([message, details]) },
    });
  });
  afterAll(async () => {
    await client.close();
  });

  it.each([
    ['hostile arguments', { id: LONG }, 'BRIDGE_INVALID_ARGUMENTS'],
    ['hostile structured result', { id: 'aaaa', reply: LONG }, 'BRIDGE_INVALID_OUTPUT'],
    ['a matching argument and result', { id: 'aaaa', reply: 'aaa' }, undefined],
    ['a plain mismatch of the argument', { id: 'ab' }, 'BRIDGE_INVALID_ARGUMENTS'],
    ['a plain mismatch of the result', { id: 'a', reply: 'b' }, 'BRIDGE_INVALID_OUTPUT'],
  ])('answers %s at once, with timers still running', async (_label, args, code) => {
    const [tool] = await bridgeTools(client, { allow: ['lookup'] });
    if (tool === undefined) throw new Error('lookup was not bridged');
    // A timer that would starve behind a backtracking match; the call must win the race.
    let timer: NodeJS.Timeout | undefined;
    const starved = new Promise<'starved'>((resolve) => {
      timer = setTimeout(() => resolve('starved'), 20_000);
    });
    const result = await Promise.race([tool.invoke(args, context), starved]);
    clearTimeout(timer);
    if (result === 'starved') throw new Error('the event loop was held');
    expect(result.isError === true ? result.metadata?.code : undefined).toBe(code);
    if (code === undefined) expect(result.structuredContent).toEqual({ id: args.reply });
  });

  it.each([
    ['50,000 characters (over maxPatternWork)', 50_000, 'BRIDGE_INVALID_OUTPUT'],
    ['1,500 characters', 1_500, undefined],
  ])(
    'checks a large pattern against a structured result of %s in bounded time',
    async (_label, size, code) => {
      const [tool] = await bridgeTools(client, { allow: ['wide'] });
      if (tool === undefined) throw new Error('wide was not bridged');
      const result = await tool.invoke({ size }, context);
      expect(result.isError === true ? result.metadata?.code : undefined).toBe(code);
    },
  );

  it('a ToolRegistry with the default validator checks bridged arguments in linear time too', async () => {
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      tools: await bridgeTools(client, { allow: ['lookup'] }),
    });
    try {
      await expect(registry.invoke('lookup', { id: LONG }, context)).rejects.toMatchObject({
        code: 'REGISTRY_INPUT_INVALID',
      });
      const ok = await registry.invoke('lookup', { id: 'aa', reply: 'a' }, context);
      expect(ok.structuredContent).toEqual({ id: 'a' });
    } finally {
      await registry.close();
    }
  });

  it('does not enforce a lookahead and reports it once per schema, the tool still bridged', async () => {
    warnings.length = 0;
    const validator = new AjvSchemaValidator();
    const [tool] = await bridgeTools(client, { allow: ['lookaround'], validator });
    if (tool === undefined) throw new Error('lookaround was not bridged');
    const reported = (schema: string) => [
      'bridgeTools: a server tool schema has patterns the linear-time engine cannot run; they are not enforced',
      { name: 'lookaround', schema, patterns: 1 },
    ];
    expect(warnings).toEqual([reported('inputSchema')]);
    // The server stays the authority on its own inputs: the call goes through.
    const first = await tool.invoke({ id: 'admin', reply: 'root' }, context);
    expect(first.isError).not.toBe(true);
    expect(first.structuredContent).toEqual({ id: 'root' });
    await tool.invoke({ id: 'x', reply: 'y' }, context);
    expect(warnings).toEqual([reported('inputSchema'), reported('outputSchema')]);
    expect(validator.unenforcedPatterns(tool.spec.inputSchema)).toEqual(['^(?!admin$)[a-z]+$']);
  });

  it("refuses a validator that runs patterns with JavaScript's backtracking engine", async () => {
    await expect(
      bridgeTools(client, { validator: new AjvSchemaValidator({ patterns: 'native' }) }),
    ).rejects.toMatchObject({
      code: 'BRIDGE_CONFIGURATION',
      details: { option: 'validator' },
    });
  });
});
