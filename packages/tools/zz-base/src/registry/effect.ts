import type { ToolContract } from '@toolfence/tool-contract';
import { ConfigurationError } from './configuration-error.js';
import {
  type EffectDescriptor,
  type JsonObject,
  TOOL_EFFECTS,
  type ToolEffect,
  type ToolSpec,
} from './tool.js';

/** The effect a declared contract implies: `read-only` risk is `read`, every other risk `write`. */
export function effectOfContract(contract: ToolContract): ToolEffect {
  return contract.risk === 'read-only' ? 'read' : 'write';
}

/**
 * The effect of one call. With an effect descriptor: the (case-insensitive) mapped value of its
 * argument, else its default. Without one: the contract's effect, else `unknown`.
 */
export function resolveEffect(
  spec: ToolSpec,
  args: JsonObject,
  contract: ToolContract | undefined = spec.contract,
): ToolEffect {
  const descriptor = spec.effect;
  if (descriptor === undefined) {
    return contract === undefined ? 'unknown' : effectOfContract(contract);
  }
  if (typeof descriptor === 'string') return descriptor;
  if (descriptor.argument !== undefined && descriptor.byValue !== undefined) {
    const selector = Object.hasOwn(args, descriptor.argument)
      ? args[descriptor.argument]
      : undefined;
    if (typeof selector === 'string') {
      const mapped = lookupCaseInsensitive(descriptor.byValue, selector);
      if (mapped !== undefined) return mapped;
    }
  }
  return descriptor.default;
}

function lookupCaseInsensitive(
  byValue: Readonly<Record<string, ToolEffect>>,
  value: string,
): ToolEffect | undefined {
  const wanted = value.toLowerCase();
  for (const key of Object.keys(byValue)) {
    if (key.toLowerCase() === wanted) return byValue[key];
  }
  return undefined;
}

const EFFECT_DESCRIPTOR_KEYS: ReadonlySet<string> = new Set(['default', 'argument', 'byValue']);

/** Checks an effect (`'read'`) or an effect descriptor's shape; throws {@link ConfigurationError}. */
export function checkEffectDescriptor(
  descriptor: ToolEffect | EffectDescriptor,
  toolName: string,
): void {
  const effects = TOOL_EFFECTS.join(', ');
  const isEffect = (value: unknown): boolean =>
    typeof value === 'string' && (TOOL_EFFECTS as readonly string[]).includes(value);
  const fail = (what: string): never => {
    throw new ConfigurationError(`Tool ${JSON.stringify(toolName)}: ${what}`, {
      details: { tool: toolName, option: 'effect' },
    });
  };
  if (typeof descriptor === 'string') {
    if (!isEffect(descriptor))
      fail(`effect must be one of ${effects}, or { default, argument, byValue }`);
    return;
  }
  if (typeof descriptor !== 'object' || descriptor === null) {
    fail(`effect must be one of ${effects}, or an object { default, argument?, byValue? }`);
  }
  for (const key of Object.keys(descriptor)) {
    if (!EFFECT_DESCRIPTOR_KEYS.has(key)) {
      fail(
        `effect has an unknown key ${JSON.stringify(key)} (accepted: default, argument, byValue)`,
      );
    }
  }
  if (!isEffect(descriptor.default)) fail(`effect.default must be one of ${effects}`);
  if (descriptor.argument !== undefined && typeof descriptor.argument !== 'string') {
    fail('effect.argument must be a string');
  }
  if (descriptor.byValue !== undefined) {
    if (typeof descriptor.byValue !== 'object' || descriptor.byValue === null) {
      fail('effect.byValue must be an object');
    }
    for (const value of Object.values(descriptor.byValue)) {
      if (!isEffect(value)) fail(`effect.byValue values must be one of ${effects}`);
    }
  }
}
