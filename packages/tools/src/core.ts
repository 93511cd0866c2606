// `@toolfence/tools/core`: the registry, validation, authorization policies and the MCP mapping
// functions, without the built-in tools (filesystem, process, HTTP), the MCP connection and
// adapter, Skills or the network guard's errors. Each name is the main entry's very binding (the
// same module), so a host that needs only these (the MCP gateway) loads a fraction of the package.

// Tool protocol (src/registry)

export {
  type AccessScope,
  type ContentAnnotations,
  type ContentAudience,
  type ContentBlock,
  type EffectDescriptor,
  errorResult,
  type JsonObject,
  type JsonValue,
  jsonResult,
  type OperationContracts,
  TOOL_EFFECTS,
  type Tool,
  type ToolContext,
  type ToolEffect,
  type ToolOrigin,
  type ToolResult,
  type ToolSpec,
  textResult,
} from './registry/tool.js';
export { createToolContext, type ToolContextInit } from './registry/tool-context.js';

// Errors

export { ToolsError, type ToolsErrorClass, type ToolsErrorOptions } from './tools-error.js';
export { VERSION } from './version.js';

// Registry, snapshots, validation (src/registry) — issue 4

export type {
  ApprovalGrant,
  CallAuthorization,
  InvokeOptions,
} from './registry/approval-grant.js';
export { ConfigurationError } from './registry/configuration-error.js';
export { contractOf } from './registry/contract-of.js';
export {
  type DefineJsonSchemaToolOptions,
  type DefineToolBase,
  type DefineZodToolOptions,
  defineTool,
} from './registry/define-tool.js';
export { effectOfContract, resolveEffect } from './registry/effect.js';
export {
  DEFAULT_SNAPSHOT_LIMITS,
  type JsonSnapshotLimits,
  resolveSnapshotLimits,
  type SnapshotFailure,
  snapshotJsonObject,
  snapshotJsonValue,
} from './registry/json-snapshot.js';
export {
  checkOptionKeys,
  type OptionErrorFactory,
  type RenamedOptionKeys,
  renamedOptionMessage,
} from './registry/option-keys.js';
export { RegistryClosedError } from './registry/registry-closed-error.js';
export { type SameJsonValueOptions, sameJsonValue } from './registry/same-json-value.js';
export {
  DEFAULT_SCHEMA_DIALECT,
  type DeclaredSchemaDialect,
  declaredSchemaDialect,
  JSON_SCHEMA_DIALECTS,
  type JsonSchemaDialect,
} from './registry/schema-dialect.js';
export type { SchemaPatternEngine } from './registry/schema-patterns.js';
export {
  AjvSchemaValidator,
  type AjvSchemaValidatorOptions,
  DEFAULT_MAX_CACHED_SCHEMAS,
  DEFAULT_MAX_PATTERN_SIZE,
  DEFAULT_MAX_PATTERN_WORK,
  DEFAULT_MAX_VALIDATION_ISSUES,
  type SchemaValidator,
  type SchemaValidatorLogger,
  type ValidationIssue,
  type ValidationResult,
} from './registry/schema-validator.js';
export { ToolCloseError } from './registry/tool-close-error.js';
export { ToolExecutionError } from './registry/tool-execution-error.js';
export { ToolInputError } from './registry/tool-input-error.js';
export { ToolNotFoundError } from './registry/tool-not-found-error.js';
export {
  type ApprovalCallback,
  type ApprovalRequest,
  DEFAULT_APPROVAL_TIMEOUT_MS,
  digestJson,
  type RegisterOptions,
  type RegistryDiagnostics,
  type RegistryLogger,
  type ToolCall,
  type ToolEvent,
  type ToolEventBase,
  type ToolMiddleware,
  ToolRegistry,
  type ToolRegistryOptions,
} from './registry/tool-registry.js';
export { ToolStartError } from './registry/tool-start-error.js';

// What the registry asks and raises when it authorizes a call (src/registry)

export { ApprovalRequiredError } from './registry/approval-required-error.js';
export {
  type AskableTool,
  type AuthorizationRequest,
  type Authorizer,
  isPermissionDecision,
  PERMISSION_VERDICTS,
  type PermissionDecision,
  type PermissionVerdict,
  permission,
} from './registry/authorization.js';
export type {
  BudgetRequest,
  BudgetReservation,
  BudgetReserver,
} from './registry/budget.js';
export { BudgetExceededError } from './registry/budget-exceeded-error.js';
export { CALL_NOT_RUN, isCallNotRun } from './registry/call-not-run.js';
export type {
  FlowBasis,
  FlowRaise,
  FlowSessionLabels,
  FlowSink,
  FlowSource,
  FlowTrust,
  SessionFlowGuard,
} from './registry/flow-raise.js';
export { PermissionDeniedError } from './registry/permission-denied-error.js';

// Authorization policies (src/policy)

export {
  ARGUMENT_CONDITION_OPERATORS,
  type ArgumentCondition,
  type ArgumentConditions,
} from './policy/argument-conditions.js';
export { AllowAllAuthorizer } from './policy/authorizer.js';
export {
  type BudgetedTool,
  type BudgetLimits,
  type BudgetScope,
  type BudgetUsage,
  CallBudget,
  type CallBudgetOptions,
  DEFAULT_CANCEL_HOLD_MS,
  runWithBudget,
  withBudget,
} from './policy/call-budget.js';
export { firstDecisive, strictest } from './policy/combinators.js';
export {
  DEFAULT_FLOW_GUARD_LIMITS,
  FlowGuard,
  type FlowGuardOptions,
  type FlowPermit,
  type FlowToolSelector,
} from './policy/flow-guard.js';
export { MAX_CHECKED_PATH_LENGTH } from './policy/path-under.js';
export {
  compilePrincipalMatcher,
  PRINCIPAL_MATCHER_KEYS,
  PRINCIPAL_METADATA_KEY,
  type Principal,
  type PrincipalMatcher,
  principalOf,
} from './policy/principal.js';
export {
  DEFAULT_CONTENT_TRUST_THRESHOLDS,
  DEFAULT_RISK_THRESHOLDS,
  RiskPolicy,
  type RiskPolicyOptions,
  type RiskThresholds,
} from './policy/risk-policy.js';
export {
  POLICY_RULE_KEYS,
  type PolicyRule,
  RuleBasedPolicy,
  type RuleBasedPolicyOptions,
  type UnmatchedRule,
} from './policy/rule-based-policy.js';
export { type ToolIdentity, type ToolSelector, toolMatcher } from './policy/tool-selector.js';

// MCP mapping (src/mcp): reading a tool's contract, listing pages, mapping results, names

export { type McpContractReading, readMcpToolContract } from './mcp/contract-reading.js';
export type {
  McpPromptDescriptor,
  McpResourceDescriptor,
  McpResourceTemplateDescriptor,
  McpToolDescriptor,
} from './mcp/descriptors.js';
export {
  McpCapabilityError,
  McpCatalogStaleError,
  McpConfigurationError,
  McpLifecycleError,
  McpLimitError,
  McpProtocolError,
  McpRemoteError,
  type McpRemoteErrorOptions,
  McpTimeoutError,
  McpToolNameCollisionError,
  McpTransportError,
} from './mcp/errors.js';
export { DEFAULT_MCP_LIMITS, type McpLimits, resolveMcpLimits } from './mcp/mcp-limits.js';
export {
  collectPages,
  type McpCollectedPages,
  type McpCollectPagesOptions,
  type McpListingProblem,
} from './mcp/pagination.js';
export {
  type McpCallToolResultMappingOptions,
  type McpPromptMessage,
  type McpPromptResult,
  type McpResourceReadResult,
  type McpResultLimits,
  type McpResultMapper,
  mapCallToolResult,
  mapGetPromptResult,
  mapReadResourceResult,
} from './mcp/result-mapping.js';
export {
  assignMcpToolNames,
  isValidMcpToolNamespace,
  MCP_TOOL_NAME_MAX_LENGTH,
  mcpToolName,
} from './mcp/tool-name.js';
