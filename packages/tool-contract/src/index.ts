// Package metadata

// Taxonomies and the contract shape
export {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  RISK_LEVELS,
  type RiskLevel,
  type ToolContract,
} from './taxonomy.js';
// Errors
export { ToolContractError, type ToolContractErrorOptions } from './tool-contract-error.js';
export { VERSION } from './version.js';
