/**
 * Every error code the service answers with, and its HTTP status. The wire shape is fixed by
 * spec §8.1: `{ "error": "<code>", "message": "..." }`; clients treat `error` as the contract.
 * Codes marked (spec) are the spec's own; the rest are ours, documented here and in OpenAPI.
 */
export const ERROR_CODES = {
  // spec §8.1
  not_found: 404,
  invalid_signature: 401,
  production_deploy_busy: 409,
  delta_required: 409,
  origin_not_allowed: 403,
  errors_capped: 429,
  // ours: generic
  invalid_request: 400,
  unauthorized: 401,
  forbidden: 403,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
  // ours: accounts and credentials
  invalid_credentials: 401,
  cross_site_request: 403,
  session_required: 403,
  insufficient_scope: 403,
  slug_taken: 409,
  email_taken: 409,
  authorization_pending: 428,
  expired_token: 410,
  /** A device-login poll sooner than its interval (RFC 8628 §3.5): the answer's `interval` is the new one, 5 s longer. */
  slow_down: 429,
  // ours: custom domains (api/domains/)
  domain_reserved: 400,
  domain_taken: 409,
  domain_unverified: 409,
  // ours: error tracking
  invalid_transition: 409,
  // ours: deploys (issue 42)
  /** A prebuilt upload refused for what it holds (a link, a device, a path out of it, not a .tar.gz): `reason` and `entry` say which. */
  invalid_artifact: 400,
  /** A deploy asked of a project without a build source: nothing was queued (set one, or upload a prebuilt directory). */
  source_missing: 409,
  // ours: analytics
  analytics_quota_exceeded: 429,
  // ours: webhooks
  url_not_https: 400,
  url_has_credentials: 400,
  url_private_host: 400,
  url_unresolvable: 400,
  unknown_event: 400,
  // ours: integrations
  github_app_not_configured: 503,
  stripe_connect_not_configured: 503,
  /** A binding a tenant asserts (a typed Stripe account id) instead of proving through the provider's own consent. */
  ownership_proof_required: 403,
  /** An OAuth callback whose `state` is unknown, used, expired or another session's. */
  invalid_state: 400,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Retry-After of a 503 `unavailable` (the bus or the shared rate limiter is away), on the edge and the API alike. */
export const UNAVAILABLE_RETRY_AFTER_SEC = 5;
/**
 * Retry-After of a 503 `unavailable` for want of disk (DATA_DIR's free space under DATA_DIR_MIN_FREE_MB): space comes
 * back when an operator frees it, not in seconds, so clients wait longer between tries.
 */
export const DISK_FULL_RETRY_AFTER_SEC = 30;

/** Body of every failure response. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  /** invalid_request: the offending fields, as `path: problem`. */
  fields?: Array<{ path: string; message: string }>;
  [extra: string]: unknown;
}

/**
 * An expected failure, carried as a value up to the HTTP layer, which renders it with its status.
 * `retryAfterSec` becomes the `Retry-After` header (mandatory on every 429).
 */
export class ServiceError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: { retryAfterSec?: number; fields?: ErrorBody['fields']; body?: Record<string, unknown> } = {},
  ) {
    super(message);
    this.status = ERROR_CODES[code];
  }
  toBody(): ErrorBody {
    const body: ErrorBody = { error: this.code, message: this.message, ...(this.extra.body ?? {}) };
    if (this.extra.fields) body.fields = this.extra.fields;
    return body;
  }
}

export function errorBody(code: ErrorCode, message: string): ErrorBody {
  return { error: code, message };
}
