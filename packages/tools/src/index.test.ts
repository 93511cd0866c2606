import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { VERSION } from './index.js';

describe('public surface of @toolfence/tools', () => {
  it('exports exactly the pinned runtime names', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        'TOOL_EFFECTS',
        'ToolsError',
        'createToolContext',
        'errorResult',
        'jsonResult',
        'textResult',
        'VERSION',
        // Built-in tools and network guard errors (issue 5)
        'NetworkLimitError',
        'NetworkOptionsError',
        'NetworkPolicyError',
        // Registry and policies (issue 4)
        'ConfigurationError',
        'defineTool',
        'effectOfContract',
        'resolveEffect',
        'DEFAULT_SNAPSHOT_LIMITS',
        'resolveSnapshotLimits',
        'snapshotJsonObject',
        'snapshotJsonValue',
        'RegistryClosedError',
        'AjvSchemaValidator',
        'DEFAULT_MAX_VALIDATION_ISSUES',
        'ToolCloseError',
        'ToolExecutionError',
        'ToolInputError',
        'ToolNotFoundError',
        'DEFAULT_APPROVAL_TIMEOUT_MS',
        'digestJson',
        'ToolRegistry',
        'ToolStartError',
        'ApprovalRequiredError',
        'AllowAllAuthorizer',
        'isPermissionDecision',
        'PERMISSION_VERDICTS',
        'permission',
        'BudgetExceededError',
        'CallBudget',
        'runWithBudget',
        'withBudget',
        'PermissionDeniedError',
        'RuleBasedPolicy',
        'toolMatcher',
        'RiskPolicy',
        'DEFAULT_RISK_THRESHOLDS',
        'DEFAULT_CONTENT_TRUST_THRESHOLDS',
        'firstDecisive',
        'strictest',
        // MCP adapter (issue 6)
        'readMcpToolContract',
        'McpCapabilityError',
        'McpCatalogStaleError',
        'McpConfigurationError',
        'McpLifecycleError',
        'McpLimitError',
        'McpProtocolError',
        'McpRemoteError',
        'McpTimeoutError',
        'McpToolNameCollisionError',
        'McpTransportError',
        'DEFAULT_MCP_LIMITS',
        'resolveMcpLimits',
        'McpServerConfig',
        'McpServerConnection',
        'McpServerRegistry',
        'McpToolAdapter',
        'collectPages',
        'mapCallToolResult',
        'mapGetPromptResult',
        'mapReadResourceResult',
        'assignMcpToolNames',
        'isValidMcpToolNamespace',
        'MCP_TOOL_NAME_MAX_LENGTH',
        'mcpToolName',
      ].sort(),
    );
  });

  it('reports the version of its package.json', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(VERSION).toBe(manifest.version);
  });
});
