/**
 * `@cx/browser`: the service's browser client for bundlers (the same code as the script the service serves at
 * `/v1/w/cx.js`, sdk/browser/cx.ts).
 *
 *   import { init } from '@cx/browser';             // errors, analytics and flags
 *   const cx = init();                               // a site the platform serves: its own /service/v1/ routes
 *   const cx = init({ baseUrl: 'https://ingest.example.com/v1/', ingestKey: 'cak_live_...' });   // any other page
 *   cx.errors.captureException(err); cx.capture('signup', { plan: 'pro' }); cx.flags.isEnabled('new-checkout');
 *
 *   import { initErrors } from '@cx/browser';       // errors only: analytics and flags are left out of the bundle
 *
 * Nothing runs on import: each function starts what it names. Never throws into the page.
 */
import { createAnalytics, type AnalyticsClient } from './analytics.ts';
import { recordXhr } from './breadcrumbs.ts';
import { createErrors, type ErrorsClient, type ErrorsExtras, type ErrorsOptions } from './errors.ts';
import { startSession } from './sessions.ts';
import { createFlags, type FlagsClient } from './flags.ts';
import { createIdentity } from './identity.ts';
import { createTransport, safe, type TransportOptions } from './transport.ts';

export { initErrors, createErrors } from './errors.ts';
export type { ErrorsClient, ErrorsOptions, CaptureOptions } from './errors.ts';
export type { Breadcrumb, SessionUpdate } from './wire.ts';
export { createAnalytics } from './analytics.ts';
export type { AnalyticsClient } from './analytics.ts';
export { createFlags } from './flags.ts';
export type { FlagsClient } from './flags.ts';
export { createIdentity } from './identity.ts';
export type { Identity } from './identity.ts';
export { createTransport } from './transport.ts';
export type { Transport, TransportOptions } from './transport.ts';
export type { FlagAnswer } from './wire.ts';

export interface CxClient {
  errors: ErrorsClient;
  /** An analytics event for the visitor. */
  capture(event: unknown, properties?: Record<string, unknown>): void;
  /** Replace the visitor's id (kept in localStorage) and reload the flags for it. */
  identify(id: unknown): Promise<void>;
  flags: FlagsClient;
  flush(): Promise<unknown>;
  /** Answers that did not come from the service (the same-origin path is not relayed to it). */
  readonly misrouted: number;
  readonly analytics: AnalyticsClient;
}

export interface InitOptions extends TransportOptions, ErrorsOptions {}

/** Everything: errors (with sessions and XHR breadcrumbs available), analytics and flags. */
export function init(options: InitOptions = {}): CxClient {
  return createClient(options, { session: startSession, xhr: recordXhr });
}

/** The client with what `more` adds to errors: cx.js (sdk/browser/cx.ts) leaves sessions and XHR breadcrumbs out. */
export function createClient(options: InitOptions, more: ErrorsExtras): CxClient {
  const t = createTransport(options);
  const identity = createIdentity();
  const errors = createErrors(t, options, more, identity.id);
  const analytics = createAnalytics(t, identity);
  const flags = createFlags(t, identity);
  return {
    errors,
    analytics,
    capture: analytics.capture,
    identify: (id) => {
      safe(() => identity.set(id))();
      return flags.reload();
    },
    flags,
    flush: () => Promise.all([errors.flush(), analytics.flush()]),
    get misrouted() {
      return t.misrouted;
    },
  };
}
