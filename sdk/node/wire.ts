/**
 * What the Node SDK sends and reads, written out here so the package stands alone (no import from the service's
 * schemas, no runtime dependency): the edge's limits per request and the events' and flags' shapes. A test ties each to
 * the service's own (schemas/limits.ts, schemas/error-event.ts, schemas/analytics-event.ts, schemas/flags.ts), so
 * they cannot drift apart (sdk/node/wire.unit.test.ts).
 */
export const WIRE_LIMITS = {
  errorBatch: { maxEvents: 20, maxBodyBytes: 64 * 1024 },
  analyticsBatch: { maxEvents: 100, maxBodyBytes: 512 * 1024 },
  sessionsBatch: { maxSessions: 100, maxBodyBytes: 64 * 1024 },
} as const;

/** Where the edge takes each (the route table's EDGE_PATHS), and the same on a site's own host (the forwarder's). */
export const WIRE_PATHS = {
  errors: '/v1/errors/i',
  analytics: '/v1/analytics/i',
  flags: '/v1/flags/i',
  sessions: '/v1/sessions/i',
  siteErrors: '/service/v1/errors/i',
  siteAnalytics: '/service/v1/analytics/i',
  siteFlags: '/service/v1/flags/i',
  /** cx.js's session updates (issue 40), relayed by the forwarder like the others. */
  siteSessions: '/service/v1/sessions/i',
} as const;

/**
 * Breadcrumbs (issue 40): the last BREADCRUMBS_MAX sent with each error (the edge keeps 100), each message and data
 * value cut to BREADCRUMB_TEXT characters (the edge's own bounds are wider: schemas/limits.ts errorContext).
 */
export const BREADCRUMBS_MAX = 50;
export const BREADCRUMB_TEXT = 512;

/** One breadcrumb, as Sentry's are but for the time: epoch milliseconds. */
export interface WireBreadcrumb {
  timestamp: number;
  type?: string;
  category?: string;
  level?: string;
  message?: string;
  data?: Record<string, string | number | boolean>;
}

/** One error event as `POST /v1/errors/i` takes it. */
export interface WireErrorEvent {
  name: string;
  message: string;
  stack?: string;
  path?: string;
  userId?: string;
  distinctId?: string;
  sessionId?: string;
  deployId?: string;
  gitSha?: string;
  extra?: Record<string, unknown>;
  /** The debug ids of the bundles the stack names, by file (issue 37). */
  debugIds?: Record<string, string>;
  /** What happened before it, oldest first. */
  breadcrumbs?: WireBreadcrumb[];
  /** Epoch milliseconds. */
  timestamp: number;
  runtime: 'node';
}

/** One analytics event as `POST /v1/analytics/i` takes it. */
export interface WireAnalyticsEvent {
  event: string;
  distinctId: string;
  properties?: Record<string, unknown>;
  uuid: string;
  /** Epoch milliseconds. */
  timestamp: number;
  deployId?: string;
  gitSha?: string;
}

/** One flag's answer (`GET /v1/flags/i`). */
export interface FlagAnswer {
  enabled: boolean;
  variant: string | null;
  /** The flag's JSON payload when enabled, else null. */
  payload: unknown;
  reason: 'disabled' | 'no_condition_match' | 'out_of_rollout' | 'rollout' | 'unknown_flag';
}
