import { z } from 'zod';
import type { SymbolicatedFrame } from './symbolicated-frame.ts';
import { normalizeDebugId } from './debug-id.ts';
import { LIMITS } from './limits.ts';
import { eventContextOf, eventContextOfStamped, type EventContext } from './error-context.ts';

/**
 * The error event (spec §2.5) in its three shapes: as a client sends it (ErrorEventSchema, in a batch),
 * as the edge stamps it (StampedErrorEvent: an id, fields cut to their limits, defaults filled), and a
 * batch of stamped events as the pipeline consumes it (StampedErrorBatch). How a batch travels on the bus
 * as bytes is schemas/bus/error-events.ts.
 *
 * The optional text fields are defined once, in ERROR_EVENT_TEXT_FIELDS: the ingest schema, the stamped
 * event, the check of other producers' events, the scrub step, occurrence rows and issue samples all
 * read that table, so a new field is one entry there.
 */
export const ERROR_EVENT_TEXT_FIELDS = {
  /** The page or route the error happened on. Free text a client may fill with anything: scrubbed. */
  path: { max: 2048, scrubbed: true, column: 'path' },
  distinctId: { max: 256, scrubbed: false, column: 'distinct_id' },
  userId: { max: 256, scrubbed: false, column: 'user_id' },
  sessionId: { max: 256, scrubbed: false, column: 'session_id' },
  /** §7.4: with gitSha, how a server event names the deploy that stamps its environment. */
  deployId: { max: 256, scrubbed: false, column: 'deploy_id' },
  gitSha: { max: 64, scrubbed: false, column: 'git_sha' },
} as const;
export type ErrorEventTextField = keyof typeof ERROR_EVENT_TEXT_FIELDS;
export const ERROR_EVENT_TEXT_FIELD_NAMES = Object.keys(ERROR_EVENT_TEXT_FIELDS) as ErrorEventTextField[];

/**
 * Copiers of the text fields, compiled once from the table: each writes `to.<key> = <value>` per field,
 * written out. The objects the pipeline builds per event (stamped events, scrubbed events, occurrence rows,
 * samples) then get their keys by named stores in one fixed order, one V8 shape for all, where a loop of
 * keyed stores cost about a microsecond more per event (measured with bench/processor.bench.ts).
 */
type TextFieldCopy = (from: Partial<Record<ErrorEventTextField, string | undefined>>, to: Record<string, unknown>) => void;
function compileCopy(line: (field: ErrorEventTextField, column: string) => string): TextFieldCopy {
  // The names are this file's own identifiers (checked below), never input.
  for (const f of ERROR_EVENT_TEXT_FIELD_NAMES) if (!/^[a-zA-Z_]+$/.test(f + ERROR_EVENT_TEXT_FIELDS[f].column)) throw new Error(`bad field ${f}`);
  return new Function('from', 'to', ERROR_EVENT_TEXT_FIELD_NAMES.map((f) => line(f, ERROR_EVENT_TEXT_FIELDS[f].column)).join('\n')) as TextFieldCopy;
}
/** Every text field under its own name, undefined included (scrubbed events, samples). */
export const copyTextFields = compileCopy((f) => `to.${f} = from.${f};`);
/** Only the text fields that are set (stamped events: no undefined keys). */
export const copySetTextFields = compileCopy((f) => `if (from.${f} !== undefined) to.${f} = from.${f};`);
/** Every text field under its ClickHouse column, '' when unset (occurrence rows). */
export const copyTextColumns = compileCopy((f, column) => `to.${column} = from.${f} === undefined ? '' : from.${f};`);

/** One zod schema per text field, made by `make` from the field's limit. */
function textFieldShape<S extends z.ZodType>(make: (max: number) => S): { [K in ErrorEventTextField]: S } {
  const shape = {} as { [K in ErrorEventTextField]: S };
  for (const f of ERROR_EVENT_TEXT_FIELD_NAMES) shape[f] = make(ERROR_EVENT_TEXT_FIELDS[f].max);
  return shape;
}

/**
 * Ingest input. Over-long name/message/stack are cut, not refused (the edge records which fields were
 * cut in `truncated`). `environment` never stamps the event: the server does (§7.4); the client's value is kept as the
 * context's `clientEnvironment`. The context fields (breadcrumbs ... sdk) are read by schemas/error-context.ts, which
 * keeps what fits its bounds and leaves out the rest: declared unknown here, so no shape of them refuses an event.
 */
export const ErrorEventSchema = z.object({
  name: z.string().optional(),
  message: z.string({ error: 'message is required and must be a string' }),
  stack: z.string().optional(),
  ...textFieldShape((max) => z.string().max(max).optional()),
  environment: z.unknown().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
  /** Client time: epoch milliseconds or an ISO-8601 string (the spec leaves the format open). */
  timestamp: z.union([z.number().finite(), z.string().max(64)]).optional(),
  runtime: z.enum(['browser', 'node']).optional(),
  /**
   * Debug ids by the URL or path of the file they belong to (issue 37): what the SDKs read from the bundler's
   * `_sentryDebugIds`. Entries that are not a file and a uuid are left out, never refused (debugIdsOf).
   */
  debugIds: z.record(z.string(), z.unknown()).optional(),
  /** Issue 40 (schemas/error-context.ts): `[{ timestamp, type?, category?, level?, message?, data? }]`, oldest first. */
  breadcrumbs: z.unknown().optional(),
  /** fatal, error, warning, info, debug or log. */
  level: z.unknown().optional(),
  /** `{ key: value }`, string values. */
  tags: z.unknown().optional(),
  /** `{ browser: {...}, os: {...}, device: {...}, runtime: {...}, ... }`. */
  contexts: z.unknown().optional(),
  /** `{ url, method, headers }`: headers kept only from an allowed list (User-Agent, Referer, Accept-Language, ...). */
  request: z.unknown().optional(),
  /** `{ id, email, ipAddress, username }`. */
  user: z.unknown().optional(),
  release: z.unknown().optional(),
  dist: z.unknown().optional(),
  serverName: z.unknown().optional(),
  /** `{ name, version }`. */
  sdk: z.unknown().optional(),
});
export type ErrorEvent = z.infer<typeof ErrorEventSchema>;
/** An error event as a client sends it (the SDKs build these). */
export type ErrorEventInput = z.input<typeof ErrorEventSchema>;

export const ErrorBatchSchema = z.object({
  batch: z.array(ErrorEventSchema).min(LIMITS.errorBatch.minEvents).max(LIMITS.errorBatch.maxEvents),
});
export type ErrorBatch = z.infer<typeof ErrorBatchSchema>;

export const ENVIRONMENTS = ['production', 'preview', 'unknown'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** One event as the pipeline receives it: validated, cut to size, stamped. */
export interface StampedErrorEvent extends Partial<Record<ErrorEventTextField, string>> {
  eventId: string;
  name: string;
  message: string;
  stack: string;
  extra?: Record<string, unknown>;
  /** Client timestamp, normalised to epoch ms when it parses. */
  clientTime?: number;
  runtime: 'browser' | 'node';
  /** Fields the edge cut to their limit. */
  truncated: Array<'name' | 'message' | 'stack'>;
  /** File URL -> debug id (canonical uuid), at most LIMITS.errorFields.debugIds entries. */
  debugIds?: Record<string, string>;
  /**
   * Set by the processor's symbolication, never by a client (issue 37): when a source map resolved a frame, `stack`
   * holds the original frames, `minifiedStack` the stack as sent, and `frames` each frame's resolution.
   */
  minifiedStack?: string;
  frames?: SymbolicatedFrame[];
  /** Breadcrumbs, level, tags, contexts, request, user, release, ... as kept (issue 40); absent when the event sent none. */
  context?: EventContext;
}

/**
 * The debug ids of an event as the pipeline keeps them: up to LIMITS.errorFields.debugIds entries whose file is a
 * string of at most 2048 characters and whose id is a uuid (canonical: lower case, dashed); undefined when none.
 */
export function debugIdsOf(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const out: Record<string, string> = {};
  let n = 0;
  for (const [file, id] of Object.entries(value)) {
    if (n >= F.debugIds) break;
    const debugId = normalizeDebugId(id);
    if (!debugId || !file || file.length > 2048 || file === '__proto__') continue;
    out[file] = debugId;
    n++;
  }
  return n ? out : undefined;
}

/** One accepted batch as the pipeline consumes it: the edge's stamp and every event stamped. */
export interface StampedErrorBatch {
  projectId: string;
  /**
   * Host of the request's Origin header, with `:port` unless the port is 443 (ingest/origin-policy.ts;
   * edges before that sent the bare hostname, which still matches); null for server-to-server posts.
   */
  originHost: string | null;
  /** Epoch ms at the edge. */
  receivedAt: number;
  /**
   * The request's User-Agent, cut to LIMITS.errorContext.userAgent (issue 40): a browser event's contexts come from it
   * when the event names none. Absent from edges before it, and for a request without one.
   */
  userAgent?: string;
  events: StampedErrorEvent[];
}

const F = LIMITS.errorFields;

/**
 * Stamp one validated event: cut name/message/stack to their limits (listing what was cut, not
 * refusing it), default the name and runtime, drop `environment` (the processor stamps it, §7.4),
 * normalise the client timestamp to epoch ms.
 */
export function stampErrorEvent(e: ErrorEvent, eventId: string, defaultRuntime: 'browser' | 'node'): StampedErrorEvent {
  const truncated: StampedErrorEvent['truncated'] = [];
  let name = e.name || 'Error';
  let message = e.message;
  let stack = e.stack ?? '';
  if (name.length > F.name) {
    name = name.slice(0, F.name);
    truncated.push('name');
  }
  if (message.length > F.message) {
    message = message.slice(0, F.message);
    truncated.push('message');
  }
  if (stack.length > F.stack) {
    stack = stack.slice(0, F.stack);
    truncated.push('stack');
  }
  const out: StampedErrorEvent = { eventId, name, message, stack, runtime: e.runtime ?? defaultRuntime, truncated };
  copySetTextFields(e, out as unknown as Record<string, unknown>);
  if (e.extra !== undefined) out.extra = e.extra;
  const debugIds = debugIdsOf(e.debugIds);
  if (debugIds) out.debugIds = debugIds;
  const clientTime = normaliseTime(e.timestamp);
  if (clientTime !== undefined) out.clientTime = clientTime;
  const context = eventContextOf(e);
  if (context) out.context = context;
  return out;
}

/**
 * Client time as epoch ms, or undefined when it is not a time every store can hold (isTime): the client's
 * clock is informational, so a value out of range is dropped, not refused.
 */
function normaliseTime(t: number | string | undefined): number | undefined {
  if (t === undefined) return undefined;
  const ms = typeof t === 'number' ? t : Date.parse(t);
  return isTime(ms) ? ms : undefined;
}

/**
 * A number of epoch ms that every store can hold: from 1900-01-01 to the end of 2299 (ClickHouse
 * DateTime64's range; a Date holds more, and a time beyond it would fail the occurrence insert on every
 * delivery).
 */
export function isTime(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && ms >= MIN_TIME_MS && ms < MAX_TIME_MS;
}
const MIN_TIME_MS = Date.UTC(1900, 0, 1);
const MAX_TIME_MS = Date.UTC(2300, 0, 1);

/** A stamped event from another producer (bus envelope v1), checked before the pipeline trusts its fields. */
export const StampedErrorEventSchema = z.object({
  // An id, not a document: bounded well under what a btree index row holds.
  eventId: z.string().min(1).max(128),
  // name, stack, runtime and truncated may be left out: the pipeline fills them in.
  name: z.string().optional(),
  message: z.string(),
  stack: z.string().optional(),
  ...textFieldShape(() => z.string().optional()),
  extra: z.record(z.string(), z.unknown()).optional(),
  // Out of range: dropped, as the edge drops it.
  clientTime: z
    .unknown()
    .optional()
    .transform((t) => (isTime(t) ? t : undefined)),
  runtime: z.enum(['browser', 'node']).optional(),
  truncated: z.array(z.enum(['name', 'message', 'stack'])).optional(),
  debugIds: z
    .unknown()
    .optional()
    .transform((d) => debugIdsOf(d)),
  // Held to the edge's bounds (schemas/error-context.ts).
  context: z
    .unknown()
    .optional()
    .transform((c) => eventContextOfStamped(c)),
});

/** A User-Agent header as a batch keeps it: cut to its limit; undefined when empty or not a string. */
export function userAgentOf(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v.slice(0, LIMITS.errorContext.userAgent) : undefined;
}
