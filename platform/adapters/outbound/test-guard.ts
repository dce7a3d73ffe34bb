import type { OutboundUrlGuard, OutboundUse } from '../../ports/outbound-url-guard.ts';
import { guardWith } from './public-internet-guard.ts';
import { systemResolver, type Resolver } from './url-rules.ts';

/**
 * The tests' guard: the production rules, except that the uses named in `loopback` may reach loopback (the tests'
 * receivers, repositories and registry stand-ins run on 127.0.0.1); every other private address stays refused. `resolve` points names at chosen addresses (DNS rebinding tests); `ca` is a test receiver's
 * self-signed certificate. No configuration chooses this adapter: only code that builds a platform by hand.
 */
export function createTestOutboundGuard(opts: { loopback?: OutboundUse[]; resolve?: Resolver; ca?: string | Buffer } = {}): OutboundUrlGuard {
  const loopback = new Set(opts.loopback ?? ['webhook', 'repository', 'build_egress', 'provider_api', 'uptime']);
  return guardWith((use) => (loopback.has(use) ? { allowLoopback: true } : {}), opts.resolve ?? systemResolver, opts.ca);
}
