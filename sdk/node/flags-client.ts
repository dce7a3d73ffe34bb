import { type FlagAnswer, WIRE_PATHS } from './wire.ts';

/**
 * Feature flags for a Node server: asks the service (`GET /v1/flags/i` with the ingest key) and keeps each answer for
 * `cacheMs` (30 s), revalidating with its ETag. A deploy's builds set SERVICE_DEPLOY_ID / SERVICE_GIT_SHA, which
 * name the deploy so conditions on the environment apply (§7.4). When the service cannot answer, a flag is off (or
 * the last answer known) and nothing is thrown into the app.
 */
export type { FlagAnswer };

export interface FlagsClient {
  /** Every flag's answer for this caller (or only `keys`). */
  getFlags(distinctId: string, opts?: { keys?: string[]; properties?: Record<string, unknown> }): Promise<Record<string, FlagAnswer>>;
  isEnabled(key: string, distinctId: string, opts?: { properties?: Record<string, unknown> }): Promise<boolean>;
  getVariant(key: string, distinctId: string, opts?: { properties?: Record<string, unknown> }): Promise<string | null>;
}

const CACHE_MAX = 10_000;

export function createFlagsClient(o: {
  baseUrl: string;
  ingestKey: string;
  fetch: typeof fetch;
  deployId?: string;
  gitSha?: string;
  cacheMs?: number;
  onError(err: unknown): void;
}): FlagsClient {
  const cacheMs = o.cacheMs ?? 30_000;
  const cache = new Map<string, { at: number; etag: string | null; flags: Record<string, FlagAnswer> }>();

  async function getFlags(distinctId: string, opts: { keys?: string[]; properties?: Record<string, unknown> } = {}): Promise<Record<string, FlagAnswer>> {
    const q = new URLSearchParams({ distinctId });
    if (opts.keys) q.set('keys', opts.keys.join(','));
    if (opts.properties) q.set('properties', JSON.stringify(opts.properties));
    if (o.deployId) q.set('deployId', o.deployId);
    else if (o.gitSha) q.set('gitSha', o.gitSha);
    const url = `${o.baseUrl}${WIRE_PATHS.flags}?${q}`;
    const hit = cache.get(url);
    if (hit && Date.now() - hit.at < cacheMs) return hit.flags;
    try {
      const headers: Record<string, string> = { authorization: `Bearer ${o.ingestKey}` };
      if (hit?.etag) headers['if-none-match'] = hit.etag;
      const res = await o.fetch(url, { headers, signal: AbortSignal.timeout(5_000) });
      if (res.status === 304 && hit) {
        hit.at = Date.now();
        return hit.flags;
      }
      if (res.status !== 200) throw new Error(`the service answered ${res.status}`);
      const flags = ((await res.json()) as { flags: Record<string, FlagAnswer> }).flags;
      if (cache.size >= CACHE_MAX) cache.clear();
      cache.set(url, { at: Date.now(), etag: res.headers.get('etag'), flags });
      return flags;
    } catch (err) {
      o.onError(err);
      return hit?.flags ?? {};
    }
  }

  return {
    getFlags,
    async isEnabled(key, distinctId, opts = {}) {
      return (await getFlags(distinctId, { keys: [key], properties: opts.properties }))[key]?.enabled ?? false;
    },
    async getVariant(key, distinctId, opts = {}) {
      const a = (await getFlags(distinctId, { keys: [key], properties: opts.properties }))[key];
      return a?.enabled ? a.variant : null;
    },
  };
}
