import { type Context, propagation, SpanKind, type TextMapGetter, trace } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { GatewayTracer } from '../src/gateway/gateway-tracing.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const TRACEPARENT = `00-${TRACE_ID}-00f067aa0ba902b7-01`;

/** The W3C propagator, counting the extractions asked of it. */
class CountingPropagator extends W3CTraceContextPropagator {
  extractions = 0;
  override extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    this.extractions += 1;
    return super.extract(context, carrier, getter);
  }
}

afterEach(() => {
  trace.disable();
  propagation.disable();
});

describe('gateway tracing with @opentelemetry/api installed and no SDK registered', () => {
  it('makes no span per call, and asks the propagator nothing, when no trace context comes in', async () => {
    const propagator = new CountingPropagator();
    propagation.setGlobalPropagator(propagator);
    const tracer = await GatewayTracer.load(true, '0.0.0');
    expect(tracer.enabled).toBe(true);
    for (const meta of [undefined, {}, { progressToken: 1 }, { tracestateX: 'a' }]) {
      const span = tracer.serverCall('s__tool', meta, {});
      expect(GatewayTracer.live(span)).toBe(false);
      expect(tracer.traceContext(tracer.upstreamCall('tool', span, {}))).toEqual({});
    }
    expect(propagator.extractions).toBe(0);
  });

  it('still carries an incoming traceparent to the upstream server', async () => {
    const propagator = new CountingPropagator();
    propagation.setGlobalPropagator(propagator);
    const tracer = await GatewayTracer.load(true, '0.0.0');
    const span = tracer.serverCall('s__tool', { traceparent: TRACEPARENT }, {});
    expect(GatewayTracer.live(span)).toBe(true);
    const upstream = tracer.upstreamCall('tool', span, {});
    expect(tracer.traceContext(upstream).traceparent).toContain(TRACE_ID);
    expect(propagator.extractions).toBe(1);
  });

  it('records spans from the first call after an SDK is registered, and none once it is gone', async () => {
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    const tracer = await GatewayTracer.load(true, '0.0.0');
    expect(GatewayTracer.live(tracer.serverCall('s__tool', undefined, {}))).toBe(false);

    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(exporter)],
    });
    trace.setGlobalTracerProvider(provider);
    const span = tracer.serverCall('s__tool', undefined, { 'mcp.session.id': 'a' });
    expect(GatewayTracer.live(span)).toBe(true);
    span.end();
    const finished = exporter.getFinishedSpans();
    expect(finished.map((each) => [each.name, each.kind])).toEqual([
      ['tools/call s__tool', SpanKind.SERVER],
    ]);

    trace.disable();
    expect(GatewayTracer.live(tracer.serverCall('s__tool', undefined, {}))).toBe(false);
    await provider.shutdown();
  });
});
