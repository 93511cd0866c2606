import type { NonPublicAddress } from '@toolfence/tools/net';

/** True for localhost, ::1 and 127.0.0.0/8. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Approves loopback addresses only (for a URL that names a loopback host). */
export function approveLoopback(_target: unknown, address: NonPublicAddress): boolean {
  return address.range === 'loopback';
}
