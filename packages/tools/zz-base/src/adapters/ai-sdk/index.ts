// @toolfence/tools/ai-sdk: registry tools for the Vercel AI SDK (package `ai`, optional peer).

export type { AdapterRegistry, AdapterRunContext, FlatPart } from '../registry-call.js';
export { type AiSdkToolOutput, type AiSdkToolsOptions, aiSdkTools } from './ai-sdk-tools.js';
