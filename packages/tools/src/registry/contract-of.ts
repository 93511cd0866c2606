import type { ToolContract } from '@toolfence/tool-contract';
import type { ToolSpec } from './tool.js';

/** The contract a tool declared: `spec.contract`. */
export function contractOf(spec: ToolSpec): ToolContract | undefined {
  return spec.contract;
}
