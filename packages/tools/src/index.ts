// Package metadata

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

// Built-in tools (src/builtin) — issue 5

export {
  BubblewrapSandbox,
  type BubblewrapSandboxOptions,
  DEFAULT_BUBBLEWRAP_LIMITS,
  DEFAULT_BUBBLEWRAP_READ_ONLY_PATHS,
  type SandboxUser,
} from './builtin/bubblewrap-sandbox.js';
export {
  FileSystemAccessError,
  type FileSystemErrorCode,
} from './builtin/file-system-error.js';
export {
  FILE_SYSTEM_OPERATION_RISKS,
  FILE_SYSTEM_OPERATIONS,
  type FileSystemOperation,
  FileSystemTool,
  type FileSystemToolOptions,
} from './builtin/file-system-tool.js';
export { FileSystemToolOptionsError } from './builtin/file-system-tool-options-error.js';
export {
  HTTP_TOOL_METHOD_RISKS,
  HTTP_TOOL_METHODS,
  HttpTool,
  type HttpToolMethod,
  type HttpToolOptions,
} from './builtin/http-tool.js';
export { HttpToolOptionsError } from './builtin/http-tool-options-error.js';
export {
  LocalProcessSandbox,
  type LocalProcessSandboxOptions,
} from './builtin/local-process-sandbox.js';
export { DEFAULT_PROGRAM_RULES, type ProgramRule } from './builtin/program-rules.js';
export {
  type AppliedResourceLimits,
  DEFAULT_PROCESS_RESOURCE_LIMITS,
  type ProcessResourceLimits,
  SANDBOX_LIMITS,
  type SandboxLimit,
} from './builtin/resource-limits.js';
export type {
  Sandbox,
  SandboxRunRequest,
  SandboxRunResult,
  SandboxVerifyRequest,
} from './builtin/sandbox.js';
export { SandboxUnavailableError } from './builtin/sandbox-unavailable-error.js';
export {
  MAX_SHELL_ARGUMENT_BYTES,
  MAX_SHELL_ARGUMENTS,
  ShellTool,
  type ShellToolOptions,
} from './builtin/shell-tool.js';
export { ShellToolOptionsError } from './builtin/shell-tool-options-error.js';
// Network guard errors (the guard itself is the `@toolfence/tools/net` subpath)

export { type NetworkLimit, NetworkLimitError } from './net/network-limit-error.js';
export { NetworkOptionsError } from './net/network-options-error.js';
export { NetworkPolicyError, type NetworkPolicyReason } from './net/network-policy-error.js';
export {
  NetworkResolutionError,
  type NetworkResolutionErrorOptions,
} from './net/network-resolution-error.js';

// MCP adapter (src/mcp) — issue 6

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
  type McpListChangedOptions,
  McpServerConfig,
  type McpServerConfigInit,
} from './mcp/mcp-server-config.js';
export {
  type McpCapability,
  type McpConnectionLease,
  type McpConnectionState,
  type McpListing,
  type McpRetireReason,
  McpServerConnection,
  type McpServerConnectionInit,
  type McpServerEvent,
} from './mcp/mcp-server-connection.js';
export {
  type McpCatalog,
  McpServerRegistry,
  type McpServerRegistryOptions,
  type McpToolDiscovery,
} from './mcp/mcp-server-registry.js';
export type {
  McpCallToolParams,
  McpGetPromptParams,
  McpInitializeResult,
  McpRequestOptions,
  McpSession,
} from './mcp/mcp-session.js';
export { McpToolAdapter } from './mcp/mcp-tool-adapter.js';
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

// Skills (src/skills) — issue 6; also `@toolfence/tools/skills`

export * from './skills/index.js';
