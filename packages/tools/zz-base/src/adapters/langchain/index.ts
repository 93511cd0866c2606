// @toolfence/tools/langchain: registry tools for LangChain and LangGraph (`@langchain/core`,
// `@langchain/langgraph`, optional peers).

export type { AdapterRegistry, AdapterRunContext } from '../registry-call.js';
export {
  type LangChainApprovalDecision,
  type LangChainApprovalRequest,
  type LangChainToolArtifact,
  type LangChainToolsOptions,
  langChainTools,
} from './lang-chain-tools.js';
