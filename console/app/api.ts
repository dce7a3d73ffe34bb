/**
 * The console's one way to the service: JSON over the public `/v1` API with the session cookie (§1: the console is
 * an ordinary client). Every failure becomes an ApiError carrying the API's `error` code and `message`; a 429 also
 * carries when to retry (Retry-After), so every screen can say it in words.
 */
import { createApiClient } from '../../schemas/api/client.ts';
import type { FieldError } from '../../schemas/api/common.ts';
import { ROUTES } from '../../schemas/api/route-table.ts';

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

/** The sign-in routes answer 401 for a wrong password or no session: that is their answer, not a lost session. */
const SESSION_PATHS = new Set<string>([ROUTES.signIn.path, ROUTES.signOut.path, ROUTES.me.path]);

/** One request: `path` is the route's filled path (schemas/api/client.ts routePath), with its query string. */
async function request(method: string, path: string, body?: unknown): Promise<unknown> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      credentials: 'same-origin',
      headers: body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network', 'The service could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let json: { error?: unknown; message?: unknown; fields?: unknown } | null = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: said below
  }
  if (res.ok) return json;
  const retry = res.headers.get('retry-after');
  const retryAfterSec = retry && /^\d+$/.test(retry) ? Number(retry) : null;
  const code = typeof json?.error === 'string' ? json.error : `http_${res.status}`;
  const message =
    typeof json?.message === 'string' && json.message ? json.message : `The service answered ${res.status}${code.startsWith('http_') ? '' : ` (${code})`}.`;
  const err = new ApiError(res.status, code, message, retryAfterSec, Array.isArray(json?.fields) ? (json.fields as FieldError[]) : []);
  if (res.status === 401 && !SESSION_PATHS.has(path.split('?')[0]!)) for (const fn of signedOutListeners) fn();
  throw err;
}

/** The console's typed client: `client.call('listWebhookEndpoints', { params: { slug } })`. */
export const client = createApiClient(request);
export const call = client.call;

/** `/projects/<slug>` with the slug escaped. */
export const projectPath = (slug: string, rest = '') => `/projects/${encodeURIComponent(slug)}${rest}`;

export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

// The shapes the console reads are the API's own (schemas/api/), imported as types only: no zod reaches the browser,
// and a change to an API shape fails the console's typecheck until the console follows.
export type { IssueStatus, IssueSummary, Issue } from '../../schemas/api/errors.ts';
export type { Project } from '../../schemas/api/projects.ts';
