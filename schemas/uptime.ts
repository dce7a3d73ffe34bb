/**
 * Uptime monitoring (issue 26, spec §4.1 `uptime`, §4.2 `GET /v1/status/:slug`): what a monitor's state can be and why
 * a check failed. The monitor role (processor/uptime/) checks, the API (api/uptime/) manages and publishes.
 */
export const MONITOR_STATES = ['pending', 'up', 'down', 'paused'] as const;
export type MonitorState = (typeof MONITOR_STATES)[number];

/**
 * Why a check failed, in the order a request meets them: the name did not resolve or the guard refused its address
 * (dns), no connection (connect), the TLS handshake or certificate (tls), no answer in time (timeout), a status outside
 * the expected range (status), the expected text missing from the body (body).
 */
export const CHECK_ERRORS = ['dns', 'connect', 'tls', 'timeout', 'status', 'body', 'missed', 'failed'] as const;
export type CheckError = (typeof CHECK_ERRORS)[number];

/**
 * What a monitor watches (issue 40): `url`, a URL checked on an interval (the errors above but `missed` and `failed`);
 * `heartbeat`, a scheduled job that checks in (Sentry's cron monitors: `check_in` items, `withMonitor`, the HTTP cron
 * form), which fails when a check-in is `missed` (none by the expected time and its margin), runs past its maximum
 * runtime (`timeout`) or says `error` (`failed`).
 */
export const MONITOR_KINDS = ['url', 'heartbeat'] as const;
export type MonitorKind = (typeof MONITOR_KINDS)[number];

/**
 * A heartbeat's check-in as kept: the job's own (`in_progress`, then `ok` or `error`), `timeout` when an in-progress one
 * outlived the maximum runtime, `missed` for an expected check-in that never came (made by the monitor itself).
 */
export const CHECK_IN_STATUSES = ['in_progress', 'ok', 'error', 'timeout', 'missed'] as const;
export type CheckInStatus = (typeof CHECK_IN_STATUSES)[number];
