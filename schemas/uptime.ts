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
export const CHECK_ERRORS = ['dns', 'connect', 'tls', 'timeout', 'status', 'body'] as const;
export type CheckError = (typeof CHECK_ERRORS)[number];
