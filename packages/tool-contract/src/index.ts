// Package metadata

export { VERSION } from './version.js';

// Taxonomies and their order

export {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  compareContentTrust,
  compareRisk,
  isContentTrustLevel,
  isRiskLevel,
  maxContentTrust,
  maxRisk,
  RISK_LEVEL_ORDER,
  RISK_LEVELS,
  type RiskLevel,
  type ToolContract,
} from './taxonomy.js';

// Declaring a contract (the tool author's side)

export {
  CONTRACT_DEFAULTS,
  type ContractInput,
  defineContract,
  type IsoDateLiteral,
  type SemverLiteral,
} from './define-contract.js';

// Attaching a contract to a handler and publishing it as MCP annotations

export {
  ANNOTATION_ALIASES,
  ANNOTATION_CONTENT_TRUST_RISK,
  ANNOTATION_DEPRECATED_SINCE,
  ANNOTATION_REPLACEMENT,
  ANNOTATION_RISK_LEVEL,
  ANNOTATION_SUNSET,
  ANNOTATION_VERSION,
  type AnnotatedToolConfig,
  CONTRACT_META_KEY,
  type ContractAnnotations,
  getContract,
  type NoAnnotations,
  openWorldFor,
  toolAnnotations,
  withContract,
  withContractAnnotations,
} from './annotations.js';

// Reading a contract back from a tools/list entry (the gateway side)

export {
  type ContractSource,
  DEFAULT_MAX_ALIASES,
  type ReadContractOptions,
  type ReadContractResult,
  readContract,
  type ToolListEntry,
  UNKNOWN_VERSION,
} from './read-contract.js';

// JSON Schema of the annotation object, for gateways in other languages

export {
  CONTRACT_ANNOTATIONS_JSON_SCHEMA,
  type JsonSchemaObject,
} from './annotation-schema.js';

// Precedence (override > declaration > heuristic), downgrade check, catalog fingerprint

export type { CatalogSnapshot } from './catalog.js';
export { catalogFingerprint } from './catalog-fingerprint.js';
export {
  type ContractOverrides,
  type DowngradeFacts,
  type DowngradeFinding,
  type DowngradeReason,
  detectDowngrades,
} from './detect-downgrades.js';
export {
  type ContractOverride,
  defineOverride,
  type EffectiveContract,
  type EffectiveContractInput,
  type EffectiveSource,
  effectiveContract,
} from './effective-contract.js';

// Name/description fallback for undeclared tools

export {
  HEURISTIC_DEFAULT_CONTENT_TRUST,
  HEURISTIC_DEFAULT_RISK,
  HEURISTIC_GIT_READ_WORDS,
  HEURISTIC_OPEN_READ_OBJECTS,
  HEURISTIC_READ_OBJECT_WORDS,
  HEURISTIC_RISK_RULES,
  HEURISTIC_TRUST_RULES,
  HEURISTIC_VERSION,
  type HeuristicRiskRule,
  type HeuristicTrustRule,
  heuristicContract,
} from './heuristic-contract.js';
export { hintRiskFloor, withHintFloor } from './hint-floor.js';

// Errors

export {
  ContractDefinitionError,
  type ContractDefinitionErrorOptions,
} from './contract-definition-error.js';
export {
  type ContractProblem,
  ContractReadError,
  type ContractReadErrorOptions,
} from './contract-read-error.js';
export {
  ToolContractError,
  type ToolContractErrorClass,
  type ToolContractErrorOptions,
} from './tool-contract-error.js';
