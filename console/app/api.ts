/**
 * The console's one way to the service: JSON over the public `/v1` API with the session cookie (§1: the console is
 * an ordinary client). Every failure becomes an ApiError carrying the API's `error` code and `message`; a 429 also
 * carries when to retry (Retry-After), so every screen can say it in words.
 */
export interface FieldError {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly retryAfterSec: number | null = null,
    readonly fields: FieldError[] = [],
  ) {
    super(message);
  }

  /** What a person reads: the API's message, and for a 429 when to try again. */
  get display(): string {
    if (this.status === 429 && this.retryAfterSec !== null) return `${this.message} Try again ${retryText(this.retryAfterSec)}.`;
    return this.message;
  }
}

export function retryText(sec: number): string {
  const at = new Date(Date.now() + sec * 1000).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
  if (sec < 60) return `in ${sec} s`;
  return `in ${Math.ceil(sec / 60)} min (at ${at})`;
}

/** Listeners told when the session is gone (401), so the app can show the sign-in page. */
const signedOutListeners = new Set<() => void>();
export function onSignedOut(fn: () => void): () => void {
  signedOutListeners.add(fn);
  return () => signedOutListeners.delete(fn);
}

export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  let res: Response;
  try {
    res = await fetch(`/v1${path}`, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'The service could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let json: any = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: said below
  }
  if (res.ok) return json as T;
  const retry = res.headers.get('retry-after');
  const retryAfterSec = retry && /^\d+$/.test(retry) ? Number(retry) : null;
  const code = typeof json?.error === 'string' ? json.error : `http_${res.status}`;
  const message = typeof json?.message === 'string' && json.message ? json.message : `The service answered ${res.status}${code.startsWith('http_') ? '' : ` (${code})`}.`;
  const err = new ApiError(res.status, code, message, retryAfterSec, Array.isArray(json?.fields) ? json.fields : []);
  if (res.status === 401 && !path.startsWith('/auth/')) for (const fn of signedOutListeners) fn();
  throw err;
}

export const get = <T = any>(path: string) => api<T>('GET', path);
export const post = <T = any>(path: string, body: unknown = {}) => api<T>('POST', path, body);
export const patch = <T = any>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = <T = any>(path: string) => api<T>('DELETE', path);

/** `/projects/<slug>` with the slug escaped. */
export const projectPath = (slug: string, rest = '') => `/projects/${encodeURIComponent(slug)}${rest}`;

export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

// The shapes the console reads (the OpenAPI document at /v1/openapi.json is the full contract).
export type IssueStatus = 'unresolved' | 'resolved' | 'ignored';
export interface IssueSummary {
  groupId: string;
  name: string;
  message: string;
  status: IssueStatus;
  count: number;
  envCounts: Record<string, number>;
  firstSeen: string;
  lastSeen: string;
  regressionCount: number;
  culprit: string | null;
  suggestion: string | null;
}
export interface Issue extends IssueSummary {
  fingerprint: string;
  stack: string;
  samples: Array<Record<string, unknown>>;
}
export interface Project {
  id: string;
  slug: string;
  name: string;
  defaultBranch: string;
  createdAt: string;
}
