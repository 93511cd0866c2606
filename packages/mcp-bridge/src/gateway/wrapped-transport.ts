import type { JSONRPCMessage, Transport, TransportSendOptions } from '@modelcontextprotocol/server';

/** The second argument the SDK passes to a transport's `onmessage`. */
export type MessageExtra = Parameters<NonNullable<Transport['onmessage']>>[1];

/**
 * A transport in front of another one, for the gateway's downstream stdio layers
 * ({@link InitializeGate}, {@link FastCallTransport}): everything is the inner transport's (its
 * session id, its protocol-version setters, `send`, `close`, its errors) except what a layer
 * does with each inbound message ({@link WrappedTransport.inbound}, by default passed on) and
 * when the inner transport closes ({@link WrappedTransport.closed}, by default only passed on).
 */
export abstract class WrappedTransport implements Transport {
  /** The transport this one is in front of. */
  protected readonly inner: Transport;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: Transport['onmessage'];
  readonly setProtocolVersion?: (version: string) => void;
  readonly setSupportedProtocolVersions?: (versions: string[]) => void;

  constructor(inner: Transport) {
    this.inner = inner;
    if (inner.setProtocolVersion !== undefined) {
      this.setProtocolVersion = (version) => inner.setProtocolVersion?.(version);
    }
    if (inner.setSupportedProtocolVersions !== undefined) {
      this.setSupportedProtocolVersions = (versions) =>
        inner.setSupportedProtocolVersions?.(versions);
    }
  }

  /** The inner transport's session id. */
  get sessionId(): string | undefined {
    return this.inner.sessionId;
  }

  /** Starts the inner transport, its messages going through {@link WrappedTransport.inbound}. */
  start(): Promise<void> {
    this.inner.onmessage = (message, extra) => this.inbound(message, extra);
    this.inner.onerror = (error) => this.onerror?.(error);
    this.inner.onclose = () => {
      this.closed();
      this.onclose?.();
    };
    return this.inner.start();
  }

  /** Sends through the inner transport. */
  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    return this.inner.send(message, options);
  }

  /** Closes the inner transport. */
  close(): Promise<void> {
    return this.inner.close();
  }

  /** One message from the inner transport; by default passed on to `onmessage`. */
  protected inbound(message: JSONRPCMessage, extra: MessageExtra): void {
    this.onmessage?.(message, extra);
  }

  /** The inner transport closed, before `onclose` is called; by default nothing more. */
  protected closed(): void {}
}
