import { randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { usersRepository } from '../../../api/accounts/users-repository.ts';
import type { Platform } from '../../../platform/platform.ts';
import type { Scope } from '../../../schemas/scopes.ts';

/**
 * Plain HTTP against a running service (no app.inject): what a console, a CLI or an SDK would send.
 * `ingestUrl` serves POST /v1/errors/i, `apiUrl` every other route (the same address in the single
 * process, two addresses in the distributed setup where a proxy would route between them).
 */
export interface HttpResult {
  status: number;
  headers: Headers;
  json: any;
}

export async function http(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown } = {}): Promise<HttpResult> {
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers: { ...(init.body !== undefined ? { 'content-type': 'application/json' } : {}), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  let json: unknown = undefined;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, headers: res.headers, json };
}

export interface ServiceUrls {
  ingestUrl: string;
  apiUrl: string;
}

export interface E2eProject {
  slug: string;
  id: string;
  ingestKey: string;
  /** cx_live_ key with errors:read, errors:write, analytics:read, flags:read and flags:write. */
  apiKey: string;
}

const unique = () => randomBytes(5).toString('hex');

function expectStatus(r: HttpResult, status: number, what: string): void {
  if (r.status !== status) throw new Error(`${what}: expected ${status}, got ${r.status} ${JSON.stringify(r.json)}`);
}

/**
 * A console user: the row is made in the database (there is no public sign-up), the session comes
 * from the real sign-in route.
 */
export async function signedInUser(platform: Platform, urls: ServiceUrls): Promise<{ cookie: string; email: string }> {
  const email = `e2e-${unique()}@example.test`;
  const password = `pw-${unique()}-${unique()}`;
  await usersRepository.createUser(platform.db, { email, password });
  const res = await fetch(`${urls.apiUrl}/v1/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  if (res.status !== 200) throw new Error(`sign-in: ${res.status} ${await res.text()}`);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('cx_session='));
  if (!cookie) throw new Error('sign-in set no session cookie');
  return { cookie, email };
}

/** A project, an ingest key and an errors API key, all through the routes, with the session. */
export async function newProject(
  urls: ServiceUrls,
  cookie: string,
  opts: { production?: string[]; preview?: string[]; ingestKeys?: number } = {},
): Promise<E2eProject & { ingestKeys: string[] }> {
  const session = { cookie, 'sec-fetch-site': 'same-origin' };
  const slug = `e2e-${unique()}`;
  const created = await http(`${urls.apiUrl}/v1/projects`, {
    method: 'POST',
    headers: session,
    body: {
      name: `E2E ${slug}`,
      slug,
      environmentHosts: { production: opts.production ?? ['app.example.com'], preview: opts.preview ?? ['*.preview.example.com'] },
    },
  });
  expectStatus(created, 201, 'create project');
  const ingestKeys: string[] = [];
  for (let i = 0; i < (opts.ingestKeys ?? 1); i++) {
    const k = await http(`${urls.apiUrl}/v1/projects/${slug}/keys`, { method: 'POST', headers: session, body: { kind: 'ingest', name: `ingest ${i}` } });
    expectStatus(k, 201, 'create ingest key');
    ingestKeys.push(k.json.key.token);
  }
  const scopes: Scope[] = ['errors:read', 'errors:write', 'analytics:read', 'flags:read', 'flags:write'];
  const live = await http(`${urls.apiUrl}/v1/projects/${slug}/keys`, { method: 'POST', headers: session, body: { kind: 'live', name: 'errors', scopes } });
  expectStatus(live, 201, 'create api key');
  return { slug, id: created.json.project.id, ingestKey: ingestKeys[0]!, ingestKeys, apiKey: live.json.key.token };
}

export function postBatch(urls: ServiceUrls, ingestKey: string, batch: unknown[], headers: Record<string, string> = {}): Promise<HttpResult> {
  return http(`${urls.ingestUrl}/v1/errors/i`, { method: 'POST', headers: { authorization: `Bearer ${ingestKey}`, ...headers }, body: { batch } });
}

/** Poll `probe` until it returns a value (not undefined), at most `timeoutMs`. */
export async function eventually<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** GET `url` with the Host header set (a site host on a loopback address); node:http, since fetch does not let a caller set Host. */
export function getWithHost(url: string, host: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { headers: { host } }, (res) => {
      let body = '';
      res
        .setEncoding('utf8')
        .on('data', (c: string) => (body += c))
        .on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject).end();
  });
}
