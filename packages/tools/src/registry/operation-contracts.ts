// Per-operation contracts: checked once when a tool is registered, resolved for every call.
import {
  compareContentTrust,
  compareRisk,
  defineContract,
  type ToolContract,
} from '@toolfence/tool-contract';
import { ConfigurationError } from './configuration-error.js';
import { PermissionDeniedError } from './permission-denied-error.js';
import type { JsonObject, OperationContracts, ToolSpec } from './tool.js';
import { ToolInputError } from './tool-input-error.js';

/** A tool's per-operation contracts as the registry checked and copied them at registration. */
export interface OperationPlan {
  /** The argument whose exact string value names the operation, for a string `select`. */
  readonly argument: string | undefined;
  /** The tool's selector, for a function `select`. */
  readonly select: ((args: JsonObject) => string | undefined) | undefined;
  /** Each operation's contract (a private copy: later changes to the spec are not seen). */
  readonly operations: ReadonlyMap<string, ToolContract>;
  /** The riskiest contract of all operations (the static one `tools/list` publishes). */
  readonly worst: ToolContract;
  /** `a, b, c` for messages, cut at 512 characters. */
  readonly accepted: string;
}

/** The outcome of resolving one call: the operation it performs and that operation's contract. */
export interface CallContract {
  /** Key of the operation in `operationContracts.operations`. */
  readonly operation: string;
  /** The operation's contract. */
  readonly contract: ToolContract;
}

const OPERATION_CONTRACT_KEYS: ReadonlySet<string> = new Set(['select', 'operations']);

const plans = new WeakMap<OperationContracts, OperationPlan>();

/**
 * Checks a spec's `operationContracts` (each contract as `defineContract` checks it, `spec.effect`
 * absent, `spec.contract` if present at least as risky as every operation) and returns the plan
 * calls are resolved with. Throws {@link ConfigurationError}.
 */
export function planOperationContracts(spec: ToolSpec): OperationPlan {
  const declared = spec.operationContracts as OperationContracts;
  const name = spec.name;
  const fail = (what: string, cause?: unknown): never => {
    throw new ConfigurationError(`Tool ${JSON.stringify(name)}: ${what}`, {
      details: { tool: name, option: 'spec.operationContracts' },
      ...(cause === undefined ? {} : { cause }),
    });
  };
  if (typeof declared !== 'object' || declared === null) {
    fail('operationContracts must be an object { select, operations }');
  }
  for (const key of Object.keys(declared)) {
    if (!OPERATION_CONTRACT_KEYS.has(key)) {
      fail(
        `operationContracts has an unknown key ${JSON.stringify(key)} (accepted: select, operations)`,
      );
    }
  }
  const select: unknown = declared.select;
  if (!(typeof select === 'string' && select !== '') && typeof select !== 'function') {
    fail(
      'operationContracts.select must be the name of the argument that names the operation, or a function of the validated arguments that returns the operation',
    );
  }
  const operations: unknown = declared.operations;
  if (typeof operations !== 'object' || operations === null || Array.isArray(operations)) {
    fail('operationContracts.operations must be an object mapping each operation to a contract');
  }
  const copied = new Map<string, ToolContract>();
  for (const [operation, contract] of Object.entries(operations as Record<string, unknown>)) {
    try {
      copied.set(operation, defineContract(contract as Parameters<typeof defineContract>[0]));
    } catch (error) {
      fail(
        `operationContracts.operations[${JSON.stringify(operation.slice(0, 64))}] is not a valid contract`,
        error,
      );
    }
  }
  if (copied.size === 0) fail('operationContracts.operations must name at least one operation');
  if (spec.effect !== undefined) {
    fail(
      'declare either effect or operationContracts: with operationContracts each call gets the effect of its operation (read-only risk is read, any other risk write)',
    );
  }
  const worst = riskiest([...copied.values()]);
  if (spec.contract !== undefined) {
    for (const [operation, contract] of copied) {
      if (
        compareRisk(contract.risk, spec.contract.risk) > 0 ||
        compareContentTrust(contract.contentTrust, spec.contract.contentTrust) > 0
      ) {
        fail(
          `spec.contract (what tools/list publishes) must be at least as risky as every operation, and ${JSON.stringify(operation.slice(0, 64))} is riskier; omit spec.contract to publish the riskiest operation's`,
        );
      }
    }
  }
  const names = [...copied.keys()].join(', ');
  const plan: OperationPlan = Object.freeze({
    argument: typeof select === 'string' ? select : undefined,
    select:
      typeof select === 'function'
        ? (select as (args: JsonObject) => string | undefined)
        : undefined,
    operations: copied,
    worst,
    accepted: names.length > 512 ? `${names.slice(0, 512)}…` : names,
  });
  plans.set(declared, plan);
  return plan;
}

/** The plan of a spec's `operationContracts`, checked once per declaration object (cached). */
export function operationPlanOf(spec: ToolSpec): OperationPlan | undefined {
  const declared = spec.operationContracts;
  if (declared === undefined) return undefined;
  return plans.get(declared) ?? planOperationContracts(spec);
}

/**
 * The operation and contract of one call, from the validated, frozen arguments. An operation the
 * tool does not declare is refused as invalid input ({@link ToolInputError}, reason
 * `unknown-operation`); a selector that throws or returns anything but a declared operation or
 * `undefined` fails closed ({@link PermissionDeniedError}, reason `contract-error`).
 */
export function resolveCallContract(
  plan: OperationPlan,
  toolName: string,
  args: JsonObject,
): CallContract {
  let operation: unknown;
  if (plan.argument !== undefined) {
    operation = Object.hasOwn(args, plan.argument) ? args[plan.argument] : undefined;
  } else {
    try {
      operation = (plan.select as (args: JsonObject) => unknown)(args);
    } catch (error) {
      throw contractError(toolName, 'its operation selector threw', error);
    }
    if (operation !== undefined && typeof operation !== 'string') {
      throw contractError(toolName, 'its operation selector returned a non-string');
    }
  }
  const contract = typeof operation === 'string' ? plan.operations.get(operation) : undefined;
  if (contract !== undefined) return { operation: operation as string, contract };
  if (plan.argument === undefined && operation !== undefined) {
    throw contractError(toolName, 'its operation selector returned an undeclared operation');
  }
  const shown =
    plan.argument === undefined
      ? 'The arguments name no operation the tool declares'
      : typeof operation === 'string'
        ? `$.${plan.argument} names an operation the tool does not declare`
        : `$.${plan.argument} must name the operation`;
  const message = `${shown} (accepted: ${plan.accepted})`;
  throw new ToolInputError(
    `Invalid arguments for tool ${JSON.stringify(toolName.slice(0, 128))}: ${message}`,
    {
      details: {
        tool: toolName,
        reason: 'unknown-operation',
        issues: [{ path: plan.argument === undefined ? '$' : `$.${plan.argument}`, message }],
      },
    },
  );
}

function contractError(toolName: string, what: string, cause?: unknown): PermissionDeniedError {
  return new PermissionDeniedError(
    `Tool ${JSON.stringify(toolName.slice(0, 128))} was denied: its per-operation contract could not be resolved (${what})`,
    {
      details: { tool: toolName, reason: 'contract-error' },
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/** The riskiest contract, with the most cautious content trust of them all. */
function riskiest(contracts: readonly ToolContract[]): ToolContract {
  let worst = contracts[0] as ToolContract;
  let trust = worst.contentTrust;
  for (const contract of contracts) {
    if (compareRisk(contract.risk, worst.risk) > 0) worst = contract;
    if (compareContentTrust(contract.contentTrust, trust) > 0) trust = contract.contentTrust;
  }
  if (trust === worst.contentTrust) return worst;
  return defineContract({
    risk: worst.risk,
    contentTrust: trust,
    idempotent: worst.idempotent,
    version: worst.version as `${number}.${number}.${number}`,
    aliases: worst.aliases,
    ...(worst.deprecatedSince === undefined
      ? {}
      : { deprecatedSince: worst.deprecatedSince as `${number}-${number}-${number}` }),
    ...(worst.sunset === undefined
      ? {}
      : { sunset: worst.sunset as `${number}-${number}-${number}` }),
    ...(worst.replacement === undefined ? {} : { replacement: worst.replacement }),
  });
}
