/**
 * What the browser client sends and reads, written out so the package stands alone (tied to the service's
 * schemas/limits.ts and schemas/flags.ts by sdk/browser/wire.unit.test.ts).
 */
export const ERROR_BATCH_EVENTS = 20;
export const ANALYTICS_BATCH_EVENTS = 100;
export const WIRE_LIMITS = {
  errorBatch: { maxEvents: ERROR_BATCH_EVENTS, maxBodyBytes: 64 * 1024 },
  analyticsBatch: { maxEvents: ANALYTICS_BATCH_EVENTS, maxBodyBytes: 512 * 1024 },
} as const;
/** Bytes of one request's body: under both routes' limits and the keepalive budget of a page being left. */
export const REQUEST_BYTES = 64000;

/**
 * Breadcrumbs (issue 40): the last BREADCRUMBS_MAX kept by the client and sent with each error event (the edge keeps
 * 100), each message and URL cut to BREADCRUMB_TEXT characters. `timestamp` is epoch ms.
 */
export const BREADCRUMBS_MAX = 50;
export const BREADCRUMB_TEXT = 512;

export interface Breadcrumb {
  timestamp: number;
  type?: string;
  category?: string;
  level?: string;
  message?: string;
  data?: Record<string, string | number | boolean>;
}

/** The session route under the base (the route table's sessions, siteSessions). */
export const SESSIONS_ROUTE = 'sessions/i';

/** One update of a page load's session (`POST .../sessions/i`, body `{ sessions: [update] }`). */
export interface SessionUpdate {
  sid: string;
  did?: string;
  init: boolean;
  status: 'ok' | 'exited' | 'crashed' | 'errored' | 'abnormal';
  errors: number;
  /** Epoch ms. */
  started: number;
  /** Epoch ms. */
  timestamp: number;
  /** Seconds, on the terminal update. */
  duration?: number;
  release?: string;
  environment?: string;
}

/** Where a site's own host relays to the edge (the route table's siteErrors, siteAnalytics, siteFlags, siteSessions share it). */
export const WIRE_SITE_BASE = '/service/v1/';

/** One flag's answer (`GET .../flags/i`). */
export interface FlagAnswer {
  enabled: boolean;
  variant: string | null;
  payload: unknown;
  reason: 'disabled' | 'no_condition_match' | 'out_of_rollout' | 'rollout' | 'unknown_flag';
}
