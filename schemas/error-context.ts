import { LIMITS } from './limits.ts';

/**
 * The context people triage an error by (issue 40): breadcrumbs, level, tags, contexts (browser, os, device, runtime,
 * ...), the request, the user, release, dist, server name, the SDK and the SDK's own environment name. A client sends
 * them as optional fields of its event (schemas/error-event.ts: `breadcrumbs`, `level`, `tags`, `contexts`, `request`,
 * `user`, `release`, `dist`, `serverName`, `sdk`, `environment`); the stamped event carries what was kept, bounded, as
 * one `context` object, absent when the event sent none (the plain event's path stays as cheap as before).
 *
 * Every field is cut, never refused: a value of the wrong type is left out, a long string is cut to its limit, a list
 * keeps its newest entries, a map its first keys. `environment` never stamps the event (§7.4): the client's value is
 * kept as `clientEnvironment`, to read and to filter by, beside the server's.
 */
const C = LIMITS.errorContext;

export const ERROR_LEVELS = ['fatal', 'error', 'warning', 'info', 'debug', 'log'] as const;
export type ErrorLevel = (typeof ERROR_LEVELS)[number];

export interface Breadcrumb {
  /** Epoch ms. */
  timestamp: number;
  type?: string;
  category?: string;
  level?: ErrorLevel;
  message?: string;
  /** Flat: strings (cut), numbers, booleans, null; a nested value as its JSON, cut. */
  data?: Record<string, string | number | boolean | null>;
}

/** One context (`browser`, `os`, `device`, `runtime`, `app`, ...): flat, as Sentry's contexts are shown. */
export type ContextTable = Record<string, string | number | boolean | null>;

export interface RequestContext {
  url?: string;
  method?: string;
  /** Only the headers of REQUEST_HEADERS, under their lower-case names. */
  headers?: Record<string, string>;
}

export interface UserContext {
  id?: string;
  email?: string;
  ipAddress?: string;
  username?: string;
}

export interface EventContext {
  /** Oldest first, the newest C.breadcrumbs kept. */
  breadcrumbs?: Breadcrumb[];
  level?: ErrorLevel;
  tags?: Record<string, string>;
  contexts?: Record<string, ContextTable>;
  request?: RequestContext;
  user?: UserContext;
  release?: string;
  dist?: string;
  serverName?: string;
  sdk?: { name: string; version?: string };
  /** The SDK's own environment name: never the event's environment (§7.4). */
  clientEnvironment?: string;
}

/** Request headers kept (the rest may carry cookies and credentials, and say little about an error). */
export const REQUEST_HEADERS = ['user-agent', 'referer', 'accept-language', 'accept', 'content-type', 'origin', 'host'] as const;
const REQUEST_HEADER_SET = new Set<string>(REQUEST_HEADERS);

/** The ingest event's context fields (ErrorEventSchema declares each as unknown; this file keeps what fits). */
export interface EventContextInput {
  breadcrumbs?: unknown;
  level?: unknown;
  tags?: unknown;
  contexts?: unknown;
  request?: unknown;
  user?: unknown;
  release?: unknown;
  dist?: unknown;
  serverName?: unknown;
  sdk?: unknown;
  environment?: unknown;
}

const obj = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
const cut = (v: unknown, max: number): string | undefined => (typeof v === 'string' && v !== '' ? (v.length > max ? v.slice(0, max) : v) : undefined);
/** A string, or a finite number as its text (Sentry lets tags and user ids be numbers). */
const textOf = (v: unknown, max: number): string | undefined =>
  typeof v === 'number' && Number.isFinite(v) ? String(v) : typeof v === 'boolean' ? String(v) : cut(v, max);

export function levelOf(v: unknown): ErrorLevel | undefined {
  if (typeof v !== 'string') return undefined;
  const l = v.toLowerCase();
  // Sentry's `warn` and `critical` are older spellings of warning and fatal.
  if (l === 'warn') return 'warning';
  if (l === 'critical') return 'fatal';
  return (ERROR_LEVELS as readonly string[]).includes(l) ? (l as ErrorLevel) : undefined;
}

/** A time as epoch ms: a number of ms, or an ISO-8601 string; undefined when it is neither or out of range. */
function timeOf(v: unknown): number | undefined {
  const ms = typeof v === 'number' ? v : typeof v === 'string' && v.length <= 64 ? Date.parse(v) : Number.NaN;
  return Number.isFinite(ms) && ms >= MIN_MS && ms < MAX_MS ? Math.round(ms) : undefined;
}
const MIN_MS = Date.UTC(1900, 0, 1);
const MAX_MS = Date.UTC(2300, 0, 1);

/** A flat table: the first `maxKeys` keys; primitives kept (strings cut); a nested value as its JSON, cut. */
function flatTable(v: unknown, maxKeys: number, maxKey: number, maxValue: number): Record<string, string | number | boolean | null> | undefined {
  const o = obj(v);
  if (!o) return undefined;
  const out: Record<string, string | number | boolean | null> = Object.create(null);
  let n = 0;
  for (const k in o) {
    if (!Object.hasOwn(o, k) || k === '__proto__' || k === '' || k.length > maxKey) continue;
    if (n >= maxKeys) break;
    const x = o[k];
    let kept: string | number | boolean | null | undefined;
    if (x === null || typeof x === 'boolean') kept = x;
    else if (typeof x === 'number') kept = Number.isFinite(x) ? x : null;
    else if (typeof x === 'string') kept = x.length > maxValue ? x.slice(0, maxValue) : x;
    else if (typeof x === 'object') kept = jsonCut(x, maxValue);
    if (kept === undefined) continue;
    out[k] = kept;
    n++;
  }
  return n ? { ...out } : undefined;
}

function jsonCut(v: unknown, max: number): string | undefined {
  try {
    const s = JSON.stringify(v);
    return s === undefined ? undefined : s.length > max ? s.slice(0, max) : s;
  } catch {
    return undefined;
  }
}

/** Breadcrumbs, oldest first: the newest C.breadcrumbs that have a time, within C.breadcrumbChars in all. */
export function breadcrumbsOf(v: unknown): Breadcrumb[] | undefined {
  const list = Array.isArray(v) ? v : Array.isArray(obj(v)?.values) ? (obj(v)!.values as unknown[]) : undefined;
  if (!list?.length) return undefined;
  const kept: Breadcrumb[] = [];
  let chars = 0;
  for (let i = list.length - 1; i >= 0 && kept.length < C.breadcrumbs; i--) {
    const b = obj(list[i]);
    const timestamp = b && timeOf(b.timestamp);
    if (!b || timestamp === undefined) continue;
    const crumb: Breadcrumb = { timestamp };
    const type = cut(b.type, C.breadcrumbName);
    const category = cut(b.category, C.breadcrumbName);
    const level = levelOf(b.level);
    const message = cut(b.message, C.breadcrumbMessage);
    const data = flatTable(b.data, C.breadcrumbDataKeys, C.key, C.breadcrumbDataValue);
    if (type) crumb.type = type;
    if (category) crumb.category = category;
    if (level) crumb.level = level;
    if (message) crumb.message = message;
    if (data) crumb.data = data;
    const size = 40 + (type?.length ?? 0) + (category?.length ?? 0) + (message?.length ?? 0) + (data ? tableChars(data) : 0);
    if (chars + size > C.breadcrumbChars) break;
    chars += size;
    kept.push(crumb);
  }
  return kept.length ? kept.reverse() : undefined;
}

function tableChars(t: Record<string, unknown>): number {
  let n = 0;
  for (const k in t) {
    const x = t[k];
    n += k.length + 4 + (typeof x === 'string' ? x.length : 8);
  }
  return n;
}

/** Tags: string keys to string values (numbers and booleans as text), the first C.tags; Sentry's `[[k, v], ...]` too. */
export function tagsOf(v: unknown): Record<string, string> | undefined {
  const entries: Array<[unknown, unknown]> = Array.isArray(v) ? v.filter(Array.isArray).map((t) => [t[0], t[1]]) : Object.entries(obj(v) ?? {});
  const out: Record<string, string> = Object.create(null);
  let n = 0;
  for (const [k, x] of entries) {
    if (n >= C.tags) break;
    if (typeof k !== 'string' || !TAG_KEY.test(k) || k.length > C.tagKey || k === '__proto__' || k in out) continue;
    const value = textOf(x, C.tagValue);
    if (value === undefined) continue;
    out[k] = value;
    n++;
  }
  return n ? { ...out } : undefined;
}
/** What a tag key may hold (Sentry's rule, so a key works in the issue list's `key:value` filter). */
export const TAG_KEY = /^[a-zA-Z0-9_.:-]+$/;

/** Contexts: the first C.contexts objects, each a flat table. */
export function contextsOf(v: unknown): Record<string, ContextTable> | undefined {
  const o = obj(v);
  if (!o) return undefined;
  const out: Record<string, ContextTable> = Object.create(null);
  let n = 0;
  for (const k in o) {
    if (n >= C.contexts) break;
    if (!Object.hasOwn(o, k) || k === '__proto__' || k === '' || k.length > C.key) continue;
    const table = flatTable(o[k], C.contextKeys, C.key, C.contextValue);
    if (!table) continue;
    out[k] = table;
    n++;
  }
  return n ? { ...out } : undefined;
}

export function requestOf(v: unknown): RequestContext | undefined {
  const o = obj(v);
  if (!o) return undefined;
  const out: RequestContext = {};
  const url = cut(o.url, C.url);
  const method = cut(o.method, 16);
  if (url) out.url = url;
  if (method) out.method = method.toUpperCase();
  const h = obj(o.headers);
  if (h) {
    const headers: Record<string, string> = {};
    let n = 0;
    for (const k in h) {
      const name = k.toLowerCase();
      const value = cut(h[k], C.header);
      if (!REQUEST_HEADER_SET.has(name) || value === undefined || name in headers) continue;
      headers[name] = value;
      n++;
    }
    if (n) out.headers = headers;
  }
  return out.url || out.method || out.headers ? out : undefined;
}

const IPV4 = /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
const IPV6 = /^[0-9a-fA-F:.]{2,45}$/;
/** An IP address as written, or undefined (Sentry's `{{auto}}` placeholder included: this service does not fill it). */
export function ipOf(v: unknown): string | undefined {
  return typeof v === 'string' && (IPV4.test(v) || (v.includes(':') && IPV6.test(v))) ? v : undefined;
}

export function userOf(v: unknown): UserContext | undefined {
  const o = obj(v);
  if (!o) return undefined;
  const out: UserContext = {};
  const id = textOf(o.id, C.user);
  const email = cut(o.email, C.user);
  const ipAddress = ipOf(o.ipAddress ?? o.ip_address);
  const username = textOf(o.username, C.user);
  if (id) out.id = id;
  if (email) out.email = email;
  if (ipAddress) out.ipAddress = ipAddress;
  if (username) out.username = username;
  return id || email || ipAddress || username ? out : undefined;
}

export function sdkOf(v: unknown): EventContext['sdk'] {
  const o = obj(v);
  const name = cut(o?.name, C.sdkName);
  if (!name) return undefined;
  const version = cut(o!.version, C.sdkName);
  return version ? { name, version } : { name };
}

/**
 * The context an event carries, bounded; undefined when it carries none. The plain event (none of these fields)
 * costs one look at each.
 */
export function eventContextOf(e: EventContextInput): EventContext | undefined {
  if (
    e.breadcrumbs === undefined &&
    e.level === undefined &&
    e.tags === undefined &&
    e.contexts === undefined &&
    e.request === undefined &&
    e.user === undefined &&
    e.release === undefined &&
    e.dist === undefined &&
    e.serverName === undefined &&
    e.sdk === undefined &&
    e.environment === undefined
  )
    return undefined;
  const out: EventContext = {};
  let any = false;
  const set = <K extends keyof EventContext>(k: K, v: EventContext[K] | undefined) => {
    if (v === undefined) return;
    out[k] = v;
    any = true;
  };
  set('breadcrumbs', breadcrumbsOf(e.breadcrumbs));
  set('level', levelOf(e.level));
  set('tags', tagsOf(e.tags));
  set('contexts', contextsOf(e.contexts));
  set('request', requestOf(e.request));
  set('user', userOf(e.user));
  set('release', cut(e.release, C.release));
  set('dist', cut(e.dist, C.dist));
  set('serverName', cut(e.serverName, C.serverName));
  set('sdk', sdkOf(e.sdk));
  set('clientEnvironment', cut(e.environment, C.clientEnvironment));
  return any ? out : undefined;
}

/**
 * A stamped event's `context` from another producer (bus envelope v1): held to the same bounds by reading it as
 * input once more, so a producer cannot store more than the edge would.
 */
export function eventContextOfStamped(v: unknown): EventContext | undefined {
  const o = obj(v);
  if (!o) return undefined;
  return eventContextOf({ ...o, environment: o.clientEnvironment, user: obj(o.user) } as EventContextInput);
}
