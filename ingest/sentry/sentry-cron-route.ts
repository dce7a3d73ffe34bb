import { randomUUID } from 'node:crypto';
import type uWS from 'uWebSockets.js';
import { parseBoundedJson } from '../../platform/bounded-json.ts';
import type { Platform } from '../../platform/platform.ts';
import { DISK_FULL_MESSAGE, isDiskFullError } from '../../platform/data-dir/disk-space.ts';
import { ingestTokenOfSentryKey } from '../../platform/sentry-dsn.ts';
import { EDGE_PATHS } from '../../schemas/api/edge.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { admitBatch, batchRequestHeaders, type AdmissionRules, type BatchRequestHeaders } from '../admission.ts';
import type { EdgeContext } from '../batch-route.ts';
import { clientIp, immediateReply, readBody, send, timedReply, watchedReply, type Headers, type ReplyState } from '../http/uws-reply.ts';
import { refusal, type Refusal } from '../refusals.ts';

/**
 * Sentry's HTTP cron check-ins (issue 40; Sentry's docs, "Crons: HTTP"), for a job that has no SDK:
 *   GET|POST /api/:projectId/cron/:monitorSlug/:sentryKey/?status=in_progress|ok|error[&check_in_id=&duration=&environment=]
 * POST may carry the same fields as JSON (`status`, `check_in_id`, `duration`, `environment`, `release`) and a
 * `monitor_config` that creates or updates the monitor; the query wins where both name a field. Answers 202 with no
 * body, as Sentry's Relay does. The check-in goes on the bus as the client-items message an envelope's `check_in` item
 * makes (schemas/bus/client-items.ts), for the check-in pipeline (processor/uptime/check-ins/). In order:
 *   1-7. admission (admission.ts): the key is the path's DSN public key (or an ingest token), the project number must be
 *        the key's, then origin (§7.3), paused, disk               401/403 project_mismatch/403/204/503
 *   8.   the body (POST, at most 16 KB of JSON)                     413 too_large / 400 invalid_request
 *   9.   the check-in: status required, fields bounded              400 invalid_request
 *   10.  rate limits per key, and per key and monitor slug          429 rate_limited
 *   11.  one bus message (`batchId` unique per request); 202 once the bus holds it   503
 * Every refusal is counted by reason in the Sentry routes' counters.
 */
export const SENTRY_CRON_PATH = EDGE_PATHS.sentryCron;
const H = LIMITS.uptime.heartbeat;
const MAX_BODY_BYTES = 16 * 1024;
const MINUTE_MS = 60_000;
const STATUSES = new Set(['in_progress', 'ok', 'error']);

export interface CronRouteOptions {
  /** Where the check-in goes: one message per request, published alone (a cron job checks in a few times an hour). */
  bus: Pick<Platform['bus'], 'publish'>;
}

/** A field of the check-in: a string of at most `max` characters, or a refusal naming it. */
function textField(v: unknown, name: string, max: number): string | undefined | Refusal {
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string' || v.length > max)
    return refusal('invalid_request', `${name} must be text of at most ${max} characters`, { fields: [{ path: name, message: 'invalid' }] });
  return v;
}

const bad = (path: string, message: string) => refusal('invalid_request', `${path}: ${message}`, { fields: [{ path, message }] });

/** Sentry's monitor_config (snake_case) as the bus holds it; an interval's value may come as a numeric string. */
export function monitorConfigOf(v: unknown): clientItems.MonitorConfig | undefined | Refusal {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) return bad('monitor_config', 'must be an object');
  const c = v as Record<string, unknown>;
  const s = c.schedule as Record<string, unknown> | undefined;
  const schedule =
    s && typeof s === 'object' && s.type === 'interval'
      ? { type: 'interval', value: typeof s.value === 'string' ? Number(s.value) : s.value, unit: s.unit }
      : s;
  const parsed = clientItems.MonitorConfigSchema.safeParse({
    schedule,
    checkinMargin: c.checkin_margin ?? undefined,
    maxRuntime: c.max_runtime ?? undefined,
    timezone: c.timezone ?? undefined,
    failureIssueThreshold: c.failure_issue_threshold ?? undefined,
    recoveryThreshold: c.recovery_threshold ?? undefined,
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    return bad(`monitor_config.${issue.path.join('.')}`, issue.message);
  }
  return parsed.data;
}

/** The check-in a request makes, from its query and (POST) its JSON body; pure. */
export function checkInOfRequest(slug: string, query: string, body: Buffer | undefined, receivedAt: number): clientItems.CheckInItem | Refusal {
  let json: Record<string, unknown> = {};
  if (body && body.length) {
    const parsed = parseBoundedJson(body.toString('utf8'));
    if (!parsed.ok) return refusal('invalid_request', parsed.reason === 'too_deep' ? `the body is ${parsed.message}` : 'the body is not valid JSON');
    if (parsed.value === null || typeof parsed.value !== 'object' || Array.isArray(parsed.value))
      return refusal('invalid_request', 'the body must be a JSON object');
    json = parsed.value as Record<string, unknown>;
  }
  let q: URLSearchParams;
  try {
    q = new URLSearchParams(query);
  } catch {
    return refusal('invalid_request', 'the query string does not parse');
  }
  const field = (name: string) => q.get(name) ?? json[name];
  const status = field('status');
  if (typeof status !== 'string' || !STATUSES.has(status)) return bad('status', 'must be in_progress, ok or error');
  const checkInId = textField(field('check_in_id'), 'check_in_id', 128);
  const environment = textField(field('environment'), 'environment', 64);
  const release = textField(field('release'), 'release', 250);
  for (const f of [checkInId, environment, release]) if (typeof f === 'object') return f;
  let duration: number | undefined;
  const d = field('duration');
  if (d !== undefined && d !== null && d !== '') {
    duration = typeof d === 'string' ? Number(d) : (d as number);
    if (typeof duration !== 'number' || !Number.isFinite(duration) || duration < 0 || duration > 1e9) return bad('duration', 'must be seconds, 0 or more');
  }
  const monitorConfig = monitorConfigOf(json.monitor_config);
  if (monitorConfig && 'reason' in monitorConfig) return monitorConfig;
  let monitorSlug: string;
  try {
    monitorSlug = decodeURIComponent(slug);
  } catch {
    return bad('monitorSlug', 'is not valid percent-encoding');
  }
  if (!monitorSlug || monitorSlug.length > 128) return bad('monitorSlug', 'must be 1 to 128 characters');
  const item = {
    checkInId: (checkInId as string | undefined) ?? '',
    monitorSlug,
    status: status as clientItems.CheckInItem['status'],
    ...(duration === undefined ? {} : { duration }),
    ...(monitorConfig ? { monitorConfig } : {}),
    timestamp: receivedAt,
    ...(release ? { release: release as string } : {}),
    ...(environment ? { environment: environment as string } : {}),
  };
  return item;
}

/** What a cron request carries, copied before any await (HttpRequest dies with the handler's stack). */
interface CronRequest {
  headers: BatchRequestHeaders;
  slug: string;
  sentryKey: string;
  userAgent: string;
  ip: string;
}

export function registerSentryCronRoute(edge: EdgeContext, opts: CronRouteOptions): void {
  const { app, platform, cache, counters, log } = edge;
  const { config, limiter, clock } = platform;
  const rules: AdmissionRules = {
    cache,
    widgetHosts: config.WIDGET_HOSTS,
    maxBodyBytes: MAX_BODY_BYTES,
    cap: () => undefined,
    // 1. the key is the path's; 2. any media type (curl's default form type, or none on a GET)
    credential: () => '',
    mediaType: () => true,
    check: (key, h) =>
      h.param === key.project.number ? undefined : refusal('project_mismatch', `this key belongs to project ${key.project.number}, not ${h.param}`),
    diskLow: () => platform.disk.low,
  };
  const corsOf = (origin: string): Headers =>
    origin
      ? [
          ['Access-Control-Allow-Origin', origin],
          ['Vary', 'Origin'],
        ]
      : [];

  for (const path of [SENTRY_CRON_PATH, SENTRY_CRON_PATH.replace(/\/$/, '')]) {
    app.options(path, (res, req) => {
      const origin = req.getHeader('origin');
      send(res, immediateReply(), 204, origin ? [...corsOf(origin), ['Access-Control-Allow-Methods', 'GET, POST'], ['Access-Control-Max-Age', '600']] : []);
    });
    const handler = (res: uWS.HttpResponse, req: uWS.HttpRequest) => {
      const st = timedReply(watchedReply(res, req), SENTRY_CRON_PATH, edge.observe);
      const r: CronRequest = {
        headers: batchRequestHeaders(req, true),
        slug: req.getParameter(1) ?? '',
        sentryKey: req.getParameter(2) ?? '',
        userAgent: req.getHeader('user-agent'),
        ip: clientIp(res, config.TRUST_PROXY ? req.getHeader('x-forwarded-for') : '', config.TRUST_PROXY),
      };
      const isPost = req.getMethod() === 'post';
      void handle(res, st, r, isPost).catch((err) => {
        log.error({ err }, 'cron check-in failed');
        if (!st.done) counters.refuse(res, st, refusal('internal', 'internal error'), corsOf(r.headers.origin));
      });
    };
    app.get(path, handler);
    app.post(path, handler);
  }

  async function handle(res: uWS.HttpResponse, st: ReplyState, r: CronRequest, isPost: boolean): Promise<void> {
    const cors = corsOf(r.headers.origin);
    const refuse = (x: Refusal) => counters.refuse(res, st, x, cors);
    // 1-7. admission (the key from the path)
    const token = ingestTokenOfSentryKey(r.sentryKey);
    const admitted = admitBatch(r.headers, { ...rules, credential: () => token });
    if ('reason' in admitted) return refuse(admitted);
    // 8. body
    let body: Buffer | undefined;
    if (isPost) {
      const read = await readBody(res, st, MAX_BODY_BYTES, () => refuse(refusal('too_large', `body exceeds ${MAX_BODY_BYTES} bytes`)), admitted.declaredLength);
      if (!read) return;
      body = read.body;
    }
    if (st.done) return;
    // 9. the check-in
    const receivedAt = clock.now();
    const item = checkInOfRequest(r.slug, r.headers.query, body, receivedAt);
    if ('reason' in item) return refuse(item);
    // 10. rate limits
    const keyId = admitted.key.keyId;
    let decisions: Array<{ allowed: boolean; retryAfterSec: number }>;
    try {
      decisions = await limiter.hitAll([
        { key: `cron:k:${keyId}`, limit: H.httpPerKeyPerMinute, windowMs: MINUTE_MS },
        { key: `cron:km:${keyId}:${item.monitorSlug.slice(0, 128)}`, limit: H.httpPerMonitorPerMinute, windowMs: MINUTE_MS },
      ]);
    } catch {
      return refuse(refusal('limiter_unavailable', 'check-ins are temporarily unavailable, retry later'));
    }
    const limited = decisions.filter((d) => !d.allowed);
    if (limited.length)
      return refuse(
        refusal('rate_limited', 'too many check-ins for this key or monitor', { retryAfterSec: Math.max(1, ...limited.map((d) => d.retryAfterSec)) }),
      );
    // 11. publish
    const projectId = admitted.key.project.id;
    const message: clientItems.ClientItemsMessage = {
      v: 1,
      batchId: `cron_${randomUUID()}`,
      projectId,
      originHost: admitted.originHost,
      receivedAt,
      ...(r.userAgent ? { userAgent: r.userAgent.slice(0, 512) } : {}),
      checkIns: [item],
    };
    try {
      await opts.bus.publish(clientItems.TOPIC, [{ key: projectId, value: clientItems.encode(message) }]);
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'bus publish failed; answering 503');
      if (platform.disk.noteError(err) || isDiskFullError(err)) return refuse(refusal('disk_full', DISK_FULL_MESSAGE));
      return refuse(refusal('bus_unavailable', 'the check-in could not be queued, retry later'));
    }
    if (st.done) return;
    counters.accepted(1);
    edge.keyUsage?.used(keyId);
    send(res, st, 202, cors);
  }
}
