import type { ContentTrustLevel, ContractProblem, RiskLevel } from '@toolfence/tool-contract';
import type { JsonObject, Tool, ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';
import { readMcpToolContract } from './contract-reading.js';
import type { McpToolDescriptor } from './descriptors.js';
import type { McpServerConnection } from './mcp-server-connection.js';

/**
 * A registry {@link Tool} for one tool of one MCP server catalog. Its name is
 * `mcp__<namespace>__<tool>`; its input schema is the server's (so the registry validates
 * every call); its contract comes from the tool's annotations through tool-contract's
 * `readContract` (undeclared tools get no contract and the `unknown` effect).
 *
 * Calls go to the connection and catalog generation it was discovered from: once that
 * connection is replaced, or the server reports a list change, the next call raises
 * `McpCatalogStaleError` (rediscover). A call already running finishes on the old session.
 */
export class McpToolAdapter implements Tool {
  /** Registry name, the server's description and schemas, and the contract from annotations. */
  readonly spec: ToolSpec;
  /** The tool's name on the server. */
  readonly serverToolName: string;
  /** `declared` when the annotations carried a valid tool-contract declaration. */
  readonly contractSource: 'declared' | 'heuristic';
  /** Log-safe problems with the declaration. */
  readonly contractProblems: readonly ContractProblem[];
  readonly #connection: McpServerConnection;
  readonly #generation: number;

  /**
   * Adapts `descriptor` of `connection`'s catalog `generation` under `registryName`; usually
   * created by `McpServerRegistry.discoverTools`, which assigns the names.
   */
  constructor(
    connection: McpServerConnection,
    descriptor: McpToolDescriptor,
    registryName: string,
    generation: number,
  ) {
    this.#connection = connection;
    this.#generation = generation;
    this.serverToolName = descriptor.name;
    const reading = readMcpToolContract({
      name: descriptor.name,
      ...(descriptor.description === undefined ? {} : { description: descriptor.description }),
      ...(descriptor.annotations === undefined ? {} : { annotations: descriptor.annotations }),
      ...(descriptor._meta === undefined ? {} : { _meta: descriptor._meta }),
    });
    this.contractSource = reading.source;
    this.contractProblems = reading.problems;
    this.spec = Object.freeze({
      name: registryName,
      description: descriptor.description ?? descriptor.title ?? '',
      inputSchema: descriptor.inputSchema,
      ...(descriptor.outputSchema === undefined ? {} : { outputSchema: descriptor.outputSchema }),
      ...(descriptor.annotations === undefined ? {} : { annotations: descriptor.annotations }),
      ...(reading.contract === undefined ? {} : { contract: reading.contract }),
      effect: reading.effect,
      // Rules name it by its own name on the server, or by the server plus that name.
      origin: Object.freeze({ server: connection.name, tool: descriptor.name }),
    });
  }

  /** Name of the server this tool came from. */
  get server(): string {
    return this.#connection.name;
  }

  /** The catalog generation this adapter belongs to. */
  get generation(): number {
    return this.#generation;
  }

  /** The declared risk, when declared. */
  get risk(): RiskLevel | undefined {
    return this.spec.contract?.risk;
  }

  /** The declared content trust, when declared. */
  get contentTrust(): ContentTrustLevel | undefined {
    return this.spec.contract?.contentTrust;
  }

  async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    const lease = this.#connection.acquireForCatalog(this.#generation);
    try {
      return await this.#connection.callTool(this.serverToolName, args, context.signal);
    } finally {
      lease.release();
    }
  }
}
