/**
 * The adapters' fixed cost: one call of a constant-returning registry tool through each adapter
 * (`aiSdkTools`, `langChainTools`, `openAiAgentsTools`) against the glue a developer would write
 * by hand for the same framework around the same `registry.invoke`, in the same run (issue 41:
 * target at most 1.2x the glue).
 *
 * Each call goes through the framework's own steps for one tool call, the same for both tools:
 * - AI SDK: the input JSON parsed and checked by the tool's schema (`asSchema(...).validate`, as
 *   `generateText` does), the tool's `needsApproval` when it has one, `execute`, then the model
 *   output (`toModelOutput` when the tool has one, else the SDK's default: text, or JSON through
 *   a JSON round trip). The glue: `tool({ inputSchema: jsonSchema(schema), execute })`.
 * - LangChain: `tool.invoke(toolCall)` (schema check, `_call`, the `ToolMessage`), once as a
 *   plain call and once with a LangGraph task's config (thread and checkpoint namespace, as
 *   `ToolNode` passes it). The glue: `tool(func, { schema })` with the same JSON Schema.
 * - OpenAI Agents SDK: the arguments parsed, the tool's `needsApproval` (the runner asks every
 *   function tool), `invokeFunctionTool` (the runner's own path), the output as text (the
 *   runner's `toSmartString`). The glue: `tool({ parameters: schema, strict: false, execute })`.
 * Two more rows put the same tool behind a policy that may ask about it (an `ask` rule for its
 * other operation): the adapters then preview every call with `registry.authorize` to answer the
 * framework's approval question, and the glue does the same by hand in its `needsApproval`.
 * The glue returns the registry's result as it is; the framework turns it into what the model
 * reads. The registry's policy is a RuleBasedPolicy that asks about another tool and never about
 * this one (the adapters then skip their approval preview, as `registry.mayAsk` allows). Both
 * sides import the built package (`pnpm bench` builds first): the shipped code, without the
 * wrappers tsx adds to every function made per call. Run: npx tsx packages/tools/bench/adapters.bench.ts
 */
import { tool as langchainTool } from '@langchain/core/tools';
import { tool as agentsTool, invokeFunctionTool, RunContext } from '@openai/agents';
import {
  createToolContext,
  type JsonObject,
  RuleBasedPolicy,
  type Tool,
  ToolRegistry,
  textResult,
} from '@toolfence/tools';
import { aiSdkTools } from '@toolfence/tools/ai-sdk';
import { langChainTools } from '@toolfence/tools/langchain';
import { openAiAgentsTools } from '@toolfence/tools/openai-agents';
import { tool as aiTool, asSchema, type JSONSchema7, jsonSchema, type ToolSet } from 'ai';
import { bench, interleavedPerCall, loadAverage, ROUNDS, scaled } from './fixtures/harness.js';

const TARGET = 1.2;
const CALLS = scaled(5_000, 300);

const inputSchema: JsonObject = {
  type: 'object',
  properties: {
    query: { type: 'string', maxLength: 256 },
    operation: { type: 'string', enum: ['read', 'write'] },
  },
  required: ['query', 'operation'],
  additionalProperties: false,
};

const constant: Tool = {
  spec: {
    name: 'lookup',
    description: 'bench tool returning a constant',
    inputSchema,
    operationArgument: 'operation',
  },
  invoke: async () => textResult('ok'),
};

const registry = new ToolRegistry({
  authorizer: new RuleBasedPolicy([
    { tool: 'shell', decision: 'ask' },
    { tool: 'lookup', operation: 'read', decision: 'allow' },
  ]),
  tools: [constant],
});
// The same tool behind a policy that asks about its `write` operation: the adapters' approval
// preview (`registry.authorize`) runs for every call, and the glue previews by hand the same way.
const asking = new ToolRegistry({
  authorizer: new RuleBasedPolicy([
    { tool: 'lookup', operation: 'write', decision: 'ask' },
    { tool: 'lookup', operation: 'read', decision: 'allow' },
  ]),
  tools: [constant],
});
await Promise.all([registry.ready(), asking.ready()]);
const runContext = { runId: 'bench' };
const context = createToolContext(runContext);

const argsText = (index: number): string =>
  JSON.stringify({ query: `q-${index % 100}`, operation: 'read' });
const callId = (index: number): string => `call_${index}`;

// --- AI SDK -------------------------------------------------------------------------------
type AiTool = ToolSet[string];

async function aiSdkCall(tool: AiTool, index: number): Promise<unknown> {
  const toolCallId = callId(index);
  const value: unknown = JSON.parse(argsText(index));
  // A `jsonSchema()` without a `validate` passes the value as it is (the registry validates it).
  const validate = asSchema(tool.inputSchema).validate;
  const parsed = validate === undefined ? { success: true, value } : await validate(value);
  if (!parsed.success) throw new Error('invalid input');
  const input = parsed.value;
  const options = { toolCallId, messages: [], context: {} };
  if (typeof tool.needsApproval === 'function' && (await tool.needsApproval(input, options))) {
    throw new Error('unexpected approval');
  }
  const output = await tool.execute?.(input, { ...options, abortSignal: undefined } as never);
  if (tool.toModelOutput !== undefined) {
    return tool.toModelOutput({ toolCallId, input, output } as never);
  }
  return typeof output === 'string'
    ? { type: 'text', value: output }
    : { type: 'json', value: JSON.parse(JSON.stringify(output)) };
}

/** The glue around `target`; with `previews`, its `needsApproval` asks `target.authorize`. */
function aiGlueFor(target: ToolRegistry, previews: boolean): AiTool {
  return aiTool({
    description: constant.spec.description,
    inputSchema: jsonSchema(inputSchema as JSONSchema7),
    ...(previews
      ? {
          needsApproval: async (args: unknown) =>
            (await target.authorize('lookup', args, context)).verdict === 'ask',
        }
      : {}),
    execute: (args: unknown) => target.invoke('lookup', args, context),
  }) as AiTool;
}

const aiAdapter = aiSdkTools(registry, { context: runContext }).lookup as AiTool;
const aiGlue = aiGlueFor(registry, false);
const aiAskingAdapter = aiSdkTools(asking, { context: runContext }).lookup as AiTool;
const aiAskingGlue = aiGlueFor(asking, true);

// --- LangChain ----------------------------------------------------------------------------
const [lcAdapter] = langChainTools(registry, { context: runContext });
const lcGlue = langchainTool((args) => registry.invoke('lookup', args, context), {
  name: 'lookup',
  description: constant.spec.description,
  schema: structuredClone(inputSchema),
});
const toolCall = (index: number) => ({
  name: 'lookup',
  args: JSON.parse(argsText(index)) as Record<string, unknown>,
  id: callId(index),
  type: 'tool_call' as const,
});
const graphConfig = (index: number) => ({
  configurable: { thread_id: 'bench-thread', checkpoint_ns: `tools:${index}` },
});

// --- OpenAI Agents SDK --------------------------------------------------------------------
type AgentsTool = ReturnType<typeof openAiAgentsTools>[number];
const agentsRunContext = new RunContext();

async function agentsCall(tool: AgentsTool, index: number): Promise<string> {
  const input = argsText(index);
  const details = {
    toolCall: {
      type: 'function_call' as const,
      callId: callId(index),
      name: tool.name,
      arguments: input,
    },
  };
  const parsed = JSON.parse(input) as never;
  if (await tool.needsApproval(agentsRunContext, parsed, details.toolCall.callId)) {
    throw new Error('unexpected approval');
  }
  const output = await invokeFunctionTool({ tool, runContext: agentsRunContext, input, details });
  return typeof output === 'string' ? output : JSON.stringify(output);
}

/** The glue around `target`; with `previews`, its `needsApproval` asks `target.authorize`. */
function agentsGlueFor(target: ToolRegistry, previews: boolean): AgentsTool {
  return agentsTool({
    name: 'lookup',
    description: constant.spec.description,
    parameters: inputSchema as never,
    strict: false,
    ...(previews
      ? {
          needsApproval: async (_runContext: RunContext, args: unknown) =>
            (await target.authorize('lookup', args, context)).verdict === 'ask',
        }
      : {}),
    execute: (args: unknown) => target.invoke('lookup', args, context),
  }) as unknown as AgentsTool;
}

const [agentsAdapter] = openAiAgentsTools(registry, { context: runContext });
const agentsGlue = agentsGlueFor(registry, false);
const [agentsAskingAdapter] = openAiAgentsTools(asking, { context: runContext });
const agentsAskingGlue = agentsGlueFor(asking, true);

// --- measurement --------------------------------------------------------------------------
interface Pair {
  readonly id: string;
  readonly framework: string;
  readonly glue: (index: number) => Promise<unknown>;
  readonly adapter: (index: number) => Promise<unknown>;
}

const pairs: Pair[] = [
  {
    id: 'tools.adapter-ai-sdk',
    framework: 'AI SDK (aiSdkTools)',
    glue: (index) => aiSdkCall(aiGlue, index),
    adapter: (index) => aiSdkCall(aiAdapter, index),
  },
  {
    id: 'tools.adapter-langchain',
    framework: 'LangChain (langChainTools), tool.invoke(toolCall)',
    glue: (index) => lcGlue.invoke(toolCall(index)),
    adapter: (index) => (lcAdapter as typeof lcGlue).invoke(toolCall(index)),
  },
  {
    id: 'tools.adapter-langgraph-task',
    framework: 'LangChain (langChainTools) in a LangGraph task (thread, checkpoint namespace)',
    glue: (index) => lcGlue.invoke(toolCall(index), graphConfig(index)),
    adapter: (index) => (lcAdapter as typeof lcGlue).invoke(toolCall(index), graphConfig(index)),
  },
  {
    id: 'tools.adapter-openai-agents',
    framework: 'OpenAI Agents SDK (openAiAgentsTools), invokeFunctionTool',
    glue: (index) => agentsCall(agentsGlue, index),
    adapter: (index) => agentsCall(agentsAdapter as AgentsTool, index),
  },
  {
    id: 'tools.adapter-ai-sdk-approval-preview',
    framework: 'AI SDK (aiSdkTools), policy may ask about the tool (preview per call)',
    glue: (index) => aiSdkCall(aiAskingGlue, index),
    adapter: (index) => aiSdkCall(aiAskingAdapter, index),
  },
  {
    id: 'tools.adapter-openai-agents-approval-preview',
    framework:
      'OpenAI Agents SDK (openAiAgentsTools), policy may ask about the tool (preview per call)',
    glue: (index) => agentsCall(agentsAskingGlue, index),
    adapter: (index) => agentsCall(agentsAskingAdapter as AgentsTool, index),
  },
];

// A registry call alone, for scale: what each path adds to it.
const registryOnly = (index: number) =>
  registry.invoke('lookup', JSON.parse(argsText(index)), context);

process.stdout.write(
  `\nadapter vs hand-written glue, one call of a constant-returning tool (µs per call; ${CALLS} calls a round)\n`,
);
for (const pair of pairs) {
  const { perCall, ratioToFirst } = await interleavedPerCall(
    { glue: pair.glue, adapter: pair.adapter, 'registry.invoke alone': registryOnly },
    CALLS,
  );
  const glue = perCall.get('glue') as number;
  const adapter = perCall.get('adapter') as number;
  const alone = perCall.get('registry.invoke alone') as number;
  const ratio = ratioToFirst.get('adapter') as number;
  process.stdout.write(
    `${pair.framework}\n  glue ${glue.toFixed(2)} µs, adapter ${adapter.toFixed(2)} µs, registry.invoke alone ${alone.toFixed(2)} µs: ratio ${ratio.toFixed(2)} (target <= ${TARGET})\n`,
  );
  bench({
    id: pair.id,
    label: `${pair.framework} vs the same framework's hand-written glue (constant-returning tool)`,
    ratio,
    target: TARGET,
    detail: `adapter ${adapter.toFixed(2)} µs/call, glue ${glue.toFixed(2)} µs/call, registry.invoke alone ${alone.toFixed(2)} µs/call (adapter ${(adapter / alone).toFixed(1)}x it); median of ${ROUNDS} interleaved round ratios of ${CALLS} calls; load average ${loadAverage()}`,
  });
}
await Promise.all([registry.close(), asking.close()]);
