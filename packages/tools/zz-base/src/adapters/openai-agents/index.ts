// @toolfence/tools/openai-agents: registry tools for the OpenAI Agents SDK (`@openai/agents`, optional peer).

export type { AdapterRegistry, AdapterRunContext } from '../registry-call.js';
export {
  isStrictCompatible,
  type OpenAiAgentsToolOutput,
  type OpenAiAgentsToolsOptions,
  openAiAgentsTools,
} from './open-ai-agents-tools.js';
