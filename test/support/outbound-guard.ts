import dns from 'node:dns';
import { createPublicInternetGuard } from '../../platform/adapters/outbound/public-internet-guard.ts';
import { createTestOutboundGuard } from '../../platform/adapters/outbound/test-guard.ts';
import type { Resolver } from '../../platform/adapters/outbound/url-rules.ts';
import type { OutboundUrlGuard } from '../../platform/ports/outbound-url-guard.ts';

/**
 * An outbound guard a test can steer: the tests' guard (loopback stand-ins allowed) or, with `loopback = false`, the
 * production rules; names in `table` resolve to the addresses given (DNS rebinding), `resolveWith` replaces the
 * resolver outright, and other names resolve through the system (or fail, with `unknownNames: 'fail'`).
 */
export interface SteerableGuard {
  guard: OutboundUrlGuard;
  table: Record<string, string[]>;
  loopback: boolean;
  resolveWith: Resolver | undefined;
}

export function steerableGuard(opts: { ca?: string | Buffer; unknownNames?: 'system' | 'fail' } = {}): SteerableGuard {
  const state: SteerableGuard = { guard: undefined as unknown as OutboundUrlGuard, table: {}, loopback: true, resolveWith: undefined };
  const resolve: Resolver = async (host) => {
    if (state.resolveWith) return state.resolveWith(host);
    const addrs = state.table[host];
    if (addrs) return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
    if (opts.unknownNames === 'fail') throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return dns.promises.lookup(host, { all: true, verbatim: true });
  };
  const loopback = createTestOutboundGuard({ resolve, ca: opts.ca });
  const production = createPublicInternetGuard({ resolve });
  const current = () => (state.loopback ? loopback : production);
  state.guard = {
    parseUrl: (raw, use) => current().parseUrl(raw, use),
    checkUrl: (raw, use) => current().checkUrl(raw, use),
    resolveHost: (host, use) => current().resolveHost(host, use),
    lookup: (use) => current().lookup(use),
    extraCa: opts.ca,
  };
  return state;
}
