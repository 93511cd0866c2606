// OpenTelemetry spans for the gateway, following the MCP semantic conventions. `@opentelemetry/api`
// is an optional peer dependency, imported lazily: when it is not installed nothing is emitted and
// nothing fails. The types below are the few members of that API the gateway uses.

/** The attributes of a span, as OpenTelemetry takes them. */
type Attributes = Record<string, string | number | boolean>;

interface OtelSpan {
  isRecording(): boolean;
  spanContext(): { readonly traceId: string };
  setAttribute(key: string, value: string | number | boolean): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  end(): void;
}

interface OtelTracer {
  startSpan(
    name: string,
    options: { kind: number; attributes: Attributes },
    context?: unknown,
  ): OtelSpan;
}

interface OtelApi {
  trace: {
    getTracer(name: string, version?: string): OtelTracer;
    getTracerProvider(): { getDelegate?(): unknown };
    setSpan(context: unknown, span: OtelSpan): unknown;
  };
  context: { active(): unknown };
  propagation: {
    extract(
      context: unknown,
      carrier: Record<string, unknown>,
      getter: {
        get(carrier: Record<string, unknown>, key: string): string | undefined;
        keys(carrier: Record<string, unknown>): string[];
      },
    ): unknown;
    fields(): string[];
    inject(
      context: unknown,
      carrier: Record<string, string>,
      setter: { set(carrier: Record<string, string>, key: string, value: string): void },
    ): void;
  };
  SpanKind: { SERVER: number; CLIENT: number };
  SpanStatusCode: { ERROR: number };
}

/** One span the gateway started; {@link GatewaySpan.end} records the outcome. */
export interface GatewaySpan {
  /** Adds an attribute. */
  set(key: string, value: string | number | boolean): void;
  /** Ends the span; an `errorType` marks it failed (`error.type`). */
  end(errorType?: string): void;
  /** The OpenTelemetry context holding this span, parent of the spans started inside it. */
  readonly context: unknown;
}

/** The span that records nothing and carries no trace context (tracing off or not installed). */
export const NO_SPAN: GatewaySpan = Object.freeze({
  set: () => undefined,
  end: () => undefined,
  context: undefined,
});

const metaGetter = {
  get(carrier: Record<string, unknown>, key: string): string | undefined {
    const value = carrier[key];
    return typeof value === 'string' && value.length <= 512 ? value : undefined;
  },
  keys(carrier: Record<string, unknown>): string[] {
    return Object.keys(carrier);
  },
};

/**
 * True when no OpenTelemetry SDK is registered: the API's global provider is its proxy with no
 * delegate, so it hands out its own no-op provider (`NoopTracerProvider`). A provider the API
 * cannot be asked about is taken as registered (the span is then made, as before).
 */
function noSdkRegistered(api: OtelApi): boolean {
  const provider = api.trace.getTracerProvider();
  const delegate =
    typeof provider?.getDelegate === 'function' ? provider.getDelegate() : (provider as unknown);
  return (
    typeof delegate === 'object' &&
    delegate !== null &&
    delegate.constructor?.name === 'NoopTracerProvider'
  );
}

/** True when `carrier` holds a field the registered propagator reads (`traceparent`, ...). */
function carriesTraceContext(api: OtelApi, carrier: Record<string, unknown>): boolean {
  for (const field of api.propagation.fields()) {
    if (Object.hasOwn(carrier, field)) return true;
  }
  return false;
}

/**
 * The gateway's tracer: a `tools/call <tool>` SERVER span per downstream call (its parent taken
 * from `params._meta.traceparent` / `tracestate`), and a CLIENT span around the upstream call.
 * Without `@opentelemetry/api` (or without a registered SDK) every method is a no-op.
 */
export class GatewayTracer {
  readonly #api: OtelApi | undefined;
  readonly #tracer: OtelTracer | undefined;

  private constructor(api: OtelApi | undefined, version: string) {
    this.#api = api;
    this.#tracer = api?.trace.getTracer('@toolfence/mcp-bridge', version);
  }

  /** A tracer that emits nothing. */
  static disabled(): GatewayTracer {
    return new GatewayTracer(undefined, '');
  }

  /** Loads `@opentelemetry/api` if it is installed; `enabled: false` never tries. */
  static async load(
    enabled: boolean,
    version: string,
    specifier = '@opentelemetry/api',
  ): Promise<GatewayTracer> {
    if (!enabled) return new GatewayTracer(undefined, version);
    try {
      const api = (await import(specifier)) as unknown as OtelApi;
      return new GatewayTracer(api, version);
    } catch {
      return new GatewayTracer(undefined, version);
    }
  }

  /** True when the API is present (spans go to whatever SDK the process registered). */
  get enabled(): boolean {
    return this.#api !== undefined;
  }

  /** Starts the SERVER span of one downstream `tools/call`. */
  serverCall(tool: string, meta: unknown, attributes: Readonly<Attributes>): GatewaySpan {
    const api = this.#api;
    const tracer = this.#tracer;
    if (api === undefined || tracer === undefined) return NO_SPAN;
    const carrier =
      typeof meta === 'object' && meta !== null && !Array.isArray(meta)
        ? (meta as Record<string, unknown>)
        : {};
    // No SDK registered and no trace context coming in: the span would record nothing and carry
    // no context, so it is not made (the API's propagation and no-op span cost more per call than
    // the rest of the tracing). Asked per call: an SDK registered later is used from its first call.
    if (noSdkRegistered(api) && !carriesTraceContext(api, carrier)) return NO_SPAN;
    const parent = api.propagation.extract(api.context.active(), carrier, metaGetter);
    return this.#start(`tools/call ${tool}`, api.SpanKind.SERVER, tool, attributes, parent);
  }

  /** Starts the CLIENT span of the call to the upstream server, inside `parent`. */
  upstreamCall(
    remoteTool: string,
    parent: GatewaySpan | undefined,
    attributes: Readonly<Attributes>,
  ): GatewaySpan {
    const api = this.#api;
    if (api === undefined || parent === undefined || parent === NO_SPAN) return NO_SPAN;
    return this.#start(
      `tools/call ${remoteTool}`,
      api.SpanKind.CLIENT,
      remoteTool,
      attributes,
      parent.context,
    );
  }

  /** False for the span that records nothing and carries no trace context (nothing to do). */
  static live(span: GatewaySpan | undefined): boolean {
    return span !== undefined && span !== NO_SPAN;
  }

  /** The W3C trace context of `span` (`traceparent`, `tracestate`), for an outgoing `_meta`. */
  traceContext(span: GatewaySpan | undefined): Record<string, string> {
    const carrier: Record<string, string> = {};
    if (this.#api === undefined || span === undefined || span === NO_SPAN) return carrier;
    this.#api.propagation.inject(span.context, carrier, {
      set: (target, key, value) => {
        target[key] = value;
      },
    });
    return carrier;
  }

  #start(
    name: string,
    kind: number,
    tool: string,
    attributes: Readonly<Attributes>,
    parent: unknown,
  ): GatewaySpan {
    const api = this.#api as OtelApi;
    const span = (this.#tracer as OtelTracer).startSpan(
      name,
      {
        kind,
        attributes: {
          'mcp.method.name': 'tools/call',
          'gen_ai.tool.name': tool,
          'gen_ai.operation.name': 'execute_tool',
          ...attributes,
        },
      },
      parent,
    );
    // No SDK registered (or one that samples nothing) and no incoming trace: nothing to record or
    // propagate, so the per-call work stops here.
    if (!span.isRecording() && !/[1-9a-f]/.test(span.spanContext().traceId)) return NO_SPAN;
    const context = api.trace.setSpan(parent, span);
    let ended = false;
    return {
      context,
      set: (key, value) => {
        span.setAttribute(key, value);
      },
      end: (errorType) => {
        if (ended) return;
        ended = true;
        if (errorType !== undefined) {
          span.setAttribute('error.type', errorType);
          span.setStatus({ code: api.SpanStatusCode.ERROR });
        }
        span.end();
      },
    };
  }
}
