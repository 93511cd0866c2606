// @toolfence/tools/langchain: registry tools for LangChain and LangGraph (`@langchain/core`,
// `@langchain/langgraph`, optional peers).

export type { AdapterRegistry, AdapterRunContext } from '../registry-call.js';
// How many calls' outcomes the tools keep for LangGraph resumes (option `completedCallMemory`).
export { DEFAULT_COMPLETED_CALL_MEMORY } from './completed-calls.js';
export {
  type LangChainApprovalDecision,
  type LangChainApprovalRequest,
  type LangChainToolArtifact,
  type LangChainToolsOptions,
  langChainTools,
} from './lang-chain-tools.js';
