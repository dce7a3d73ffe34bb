import { normalizeDebugId } from '../../schemas/debug-id.ts';
import { debugIdsOf, type ErrorEvent } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * A Sentry event (the JSON of an envelope's `event` item, or a store body) as our error event (§2.5), so it
 * goes through the same pipeline: exception type and value, frames turned into a V8-style stack that the
 * fingerprint parses, the message, `release` as `gitSha` when it looks like one. The context people triage by (issue
 * 40) becomes our event's context fields, which schemas/error-context.ts bounds: breadcrumbs (`{ values: [...] }` or an
 * array, times in seconds), level, tags, contexts, request, user, release, dist, server_name and the SDK's name and
 * version. `environment` does not stamp the event (the server does, §7.4): it is kept as the client's environment.
 * The event id, logger and transaction are kept in `extra.sentry`, with the SDK's `extra`, bounded. `debug_meta`'s
 * source map images become `debugIds` (issue 37).
 */
export interface SentryFrame {
  filename?: unknown;
  abs_path?: unknown;
  function?: unknown;
  module?: unknown;
  lineno?: unknown;
  colno?: unknown;
}

const F = LIMITS.errorFields;
/** A kept `extra` larger than this (serialised) is replaced by a note saying so. */
const MAX_EXTRA_CHARS = 16 * 1024;
const GIT_SHA = /^[0-9a-f]{7,40}$/i;

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);
const obj = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** Sentry's frames run oldest call first; a stack string newest first: `    at fn (file:line:col)`. */
export function stackOfFrames(frames: unknown[], header: string): string {
  const lines = [header];
  let size = header.length;
  for (let i = frames.length - 1; i >= 0 && size < F.stack; i--) {
    const f = obj(frames[i]) as SentryFrame | undefined;
    if (!f) continue;
    const file = str(f.abs_path) ?? str(f.filename) ?? str(f.module) ?? '<unknown>';
    const line = num(f.lineno);
    const col = num(f.colno);
    const where = `${file}${line !== undefined ? `:${line}` : ''}${line !== undefined && col !== undefined ? `:${col}` : ''}`;
    const fn = str(f.function);
    const text = fn && fn !== '?' ? `    at ${fn} (${where})` : `    at ${where}`;
    lines.push(text);
    size += text.length + 1;
  }
  return lines.join('\n').slice(0, F.stack);
}

function messageOf(e: Record<string, unknown>): string | undefined {
  const logentry = obj(e.logentry);
  const message = e.message;
  return str(logentry?.formatted) ?? str(logentry?.message) ?? str(message) ?? str(obj(message)?.formatted) ?? str(obj(message)?.message);
}

function boundedExtra(e: Record<string, unknown>, eventId: string | undefined): Record<string, unknown> {
  const sentry: Record<string, unknown> = { eventId, logger: str(e.logger) };
  if (str(e.transaction)) sentry.transaction = str(e.transaction)!.slice(0, 200);
  const extra: Record<string, unknown> = { ...(obj(e.extra) ?? {}), sentry };
  const text = JSON.stringify(extra);
  return text.length <= MAX_EXTRA_CHARS ? extra : { sentry: { eventId, extraTooLarge: text.length } };
}

/**
 * `debug_meta.images[]` of `type: "sourcemap"` as our `debugIds` (code_file -> debug_id): what @sentry/core's
 * applyDebugMeta writes for each frame whose file a bundle's `_sentryDebugIds` snippet named, `code_file` being the
 * frame's `abs_path` or else `filename`, as stackOfFrames names the file. Other images (native `elf`, `macho`, ...)
 * and entries that are not a file and a uuid are skipped; the walk stops at LIMITS.errorFields.debugIds entries, and
 * debugIdsOf applies its rules once more, so the bound is the one every event has.
 */
export function debugIdsOfSentry(debugMeta: unknown): Record<string, string> | undefined {
  const images = obj(debugMeta)?.images;
  if (!Array.isArray(images)) return undefined;
  const found: Record<string, string> = Object.create(null);
  let n = 0;
  for (const image of images) {
    const i = obj(image);
    const file = str(i?.code_file);
    if (i?.type !== 'sourcemap' || !file || file.length > 2048 || !normalizeDebugId(i.debug_id)) continue;
    if (!(file in found) && ++n > F.debugIds) break;
    found[file] = i.debug_id as string;
  }
  return debugIdsOf(found);
}

/** Our event for one Sentry event, or undefined when it carries neither an exception nor a message. */
export function errorEventOfSentry(input: unknown): ErrorEvent | undefined {
  const e = obj(input);
  if (!e) return undefined;
  const values = (obj(e.exception)?.values ?? (Array.isArray(e.exception) ? e.exception : undefined)) as unknown[] | undefined;
  // The last value is the exception that was thrown (earlier ones are its causes).
  const main = Array.isArray(values) && values.length ? obj(values[values.length - 1]) : undefined;
  const message = str(main?.value) ?? messageOf(e);
  const name = str(main?.type) ?? (main ? 'Error' : 'Message');
  if (!main && message === undefined) return undefined;
  const frames = (obj(main?.stacktrace)?.frames ?? obj(e.stacktrace)?.frames) as unknown[] | undefined;
  const eventId = str(e.event_id);
  const out: ErrorEvent = {
    name: name.slice(0, F.name),
    message: (message ?? '(no message)').slice(0, F.message),
    extra: boundedExtra(e, eventId),
  };
  if (Array.isArray(frames) && frames.length) out.stack = stackOfFrames(frames, `${out.name}: ${out.message.split('\n')[0]!.slice(0, 500)}`);
  const url = str(obj(e.request)?.url);
  const path = url ? pathOf(url) : str(e.transaction);
  if (path) out.path = path.slice(0, 2048);
  const user = obj(e.user);
  const userId = str(user?.id) ?? (typeof user?.id === 'number' ? String(user.id) : undefined);
  if (userId) out.userId = userId.slice(0, 256);
  const release = str(e.release);
  if (release && GIT_SHA.test(release)) out.gitSha = release.toLowerCase();
  const ts = num(e.timestamp);
  if (ts !== undefined) out.timestamp = Math.round(ts * 1000);
  else if (str(e.timestamp)) out.timestamp = (e.timestamp as string).slice(0, 64);
  const debugIds = debugIdsOfSentry(e.debug_meta);
  if (debugIds) out.debugIds = debugIds;
  if (e.platform === 'node') out.runtime = 'node';
  else if (e.platform === 'javascript') out.runtime = 'browser';
  // The context (issue 40), as sent: error-context.ts keeps what fits when the event is stamped.
  const breadcrumbs = breadcrumbsOfSentry(e.breadcrumbs);
  if (breadcrumbs) out.breadcrumbs = breadcrumbs;
  if (e.level !== undefined) out.level = e.level;
  if (e.tags !== undefined) out.tags = e.tags;
  if (e.contexts !== undefined) out.contexts = e.contexts;
  if (e.request !== undefined) out.request = e.request;
  if (user) out.user = user;
  if (e.release !== undefined) out.release = e.release;
  if (e.dist !== undefined) out.dist = e.dist;
  if (e.server_name !== undefined) out.serverName = e.server_name;
  if (e.environment !== undefined) out.environment = e.environment;
  const sdk = obj(e.sdk);
  if (sdk) out.sdk = { name: sdk.name, version: sdk.version };
  return out;
}

/**
 * Sentry's breadcrumbs (`[...]`, or `{ values: [...] }` from older SDKs), the newest LIMITS.errorContext.breadcrumbs,
 * with each time (seconds since the epoch, as Sentry sends it) in ms as our events carry it.
 */
export function breadcrumbsOfSentry(v: unknown): unknown[] | undefined {
  const list = Array.isArray(v) ? v : obj(v)?.values;
  if (!Array.isArray(list) || !list.length) return undefined;
  return list.slice(-LIMITS.errorContext.breadcrumbs).map((b) => {
    const crumb = obj(b);
    const ts = num(crumb?.timestamp);
    return crumb && ts !== undefined ? { ...crumb, timestamp: ts * 1000 } : b;
  });
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}
