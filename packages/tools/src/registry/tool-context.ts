import { ToolsError } from '../tools-error.js';
import type { AccessScope, JsonObject, ToolContext } from './tool.js';

/** What `createToolContext` accepts. */
export interface ToolContextInit {
  readonly runId: string;
  readonly stepId?: string;
  readonly metadata?: JsonObject;
  readonly accessScope?: AccessScope;
  readonly signal?: AbortSignal;
}

/**
 * Builds a frozen {@link ToolContext}: `runId` must be a non-empty string, `metadata` JSON values
 * only (deep-copied and frozen), `accessScope` defaults to `full`.
 *
 * (The registry issue replaces the metadata copy with the registry's bounded JSON snapshot.)
 */
export function createToolContext(init: ToolContextInit): ToolContext {
  if (typeof init.runId !== 'string' || init.runId.trim() === '') {
    throw new ToolsError('ToolContext.runId must be a non-empty string', {
      code: 'TOOLS_CONFIGURATION',
    });
  }
  const accessScope = init.accessScope ?? 'full';
  if (accessScope !== 'full' && accessScope !== 'read-only') {
    throw new ToolsError("ToolContext.accessScope must be 'full' or 'read-only'", {
      code: 'TOOLS_CONFIGURATION',
    });
  }
  const metadata = deepFreeze(structuredClone(init.metadata ?? {})) as JsonObject;
  return Object.freeze({
    runId: init.runId,
    ...(init.stepId === undefined ? {} : { stepId: init.stepId }),
    metadata,
    accessScope,
    ...(init.signal === undefined ? {} : { signal: init.signal }),
  });
}

function deepFreeze(value: unknown): unknown {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
