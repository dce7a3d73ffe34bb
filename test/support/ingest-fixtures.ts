import type { Platform } from '../../platform/platform.ts';
import { newId, newToken, tokenHash } from '../../platform/tokens.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import type { Bus, BusMessage, Subscription } from '../../platform/ports/bus.ts';
import type { RateDecision, RateLimiter } from '../../platform/ports/rate-limiter.ts';
import { decodeErrorBatch, TOPIC as ERRORS_TOPIC } from '../../schemas/bus/error-events.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';

/**
 * Fixtures for the ingest edge: rows inserted straight through platform.db (the edge reads them
 * from its cache), plus a recording bus and simple limiters for tests and the bench.
 * Every call makes fresh ids, so tests isolate without truncating shared tables.
 */
export interface IngestProject {
  projectId: string;
  slug: string;
  ingestKey: string;
  keyId: string;
  userId: string;
}

export interface IngestProjectOptions {
  productionDomains?: string[];
  previewDomains?: string[];
  ingestOrigins?: string[];
  paused?: boolean;
}

export async function createIngestProject(platform: Platform, opts: IngestProjectOptions = {}): Promise<IngestProject> {
  const userId = newId('usr_');
  const projectId = newId('prj_');
  const slug = `edge-${projectId.slice(4, 16)}`;
  await platform.db.query(`INSERT INTO users (id, email, password_hash) VALUES ($1, $2, 'x')`, [userId, `${userId}@example.test`]);
  await platform.db.query(
    `INSERT INTO projects (id, slug, name, owner_id, production_domains, preview_domains) VALUES ($1, $2, $3, $4, $5::text[], $6::text[])`,
    [projectId, slug, slug, userId, opts.productionDomains ?? ['app.example.com'], opts.previewDomains ?? ['*.preview.example.com']],
  );
  await platform.db.query(`INSERT INTO error_settings (project_id, paused, ingest_origins) VALUES ($1, $2, $3::text[])`, [
    projectId,
    opts.paused ?? false,
    opts.ingestOrigins ?? [],
  ]);
  const { ingestKey, keyId } = await addIngestKey(platform, projectId);
  return { projectId, slug, ingestKey, keyId, userId };
}

export async function addIngestKey(platform: Platform, projectId: string): Promise<{ ingestKey: string; keyId: string }> {
  const ingestKey = newToken(TOKEN_PREFIX.ingestKey);
  const keyId = newId('key_');
  await platform.db.query(`INSERT INTO api_keys (id, project_id, kind, hint, token_hash) VALUES ($1, $2, 'ingest', $3, $4)`, [
    keyId,
    projectId,
    ingestKey.slice(TOKEN_PREFIX.ingestKey.length, TOKEN_PREFIX.ingestKey.length + 6),
    tokenHash(ingestKey),
  ]);
  return { ingestKey, keyId };
}

export async function revokeKey(platform: Platform, keyId: string): Promise<void> {
  await platform.db.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [keyId]);
}

export async function setPaused(platform: Platform, projectId: string, paused: boolean): Promise<void> {
  await platform.db.query(`UPDATE error_settings SET paused = $2, updated_at = now() WHERE project_id = $1`, [projectId, paused]);
}

export async function setIngestOrigins(platform: Platform, projectId: string, origins: string[]): Promise<void> {
  await platform.db.query(`UPDATE error_settings SET ingest_origins = $2::text[], updated_at = now() WHERE project_id = $1`, [projectId, origins]);
}

/** Set accepted occurrences for a month (`YYYY-MM`, UTC) and environment, as the processor records them. */
export async function setUsage(platform: Platform, projectId: string, month: string, environment: string, accepted: number): Promise<void> {
  await platform.db.query(
    `INSERT INTO error_monthly_usage (project_id, month, environment, accepted) VALUES ($1, $2, $3, $4)
     ON CONFLICT (project_id, month, environment) DO UPDATE SET accepted = EXCLUDED.accepted`,
    [projectId, month, environment, accepted],
  );
}

/** A Bus that records what was published; `failWith` makes publish reject (the bus is away). */
export interface RecordingBus extends Bus {
  published: Array<{ topic: string; messages: BusMessage[] }>;
  failWith: Error | null;
  /** The error batches published (the errors topic's messages). */
  batches(): StampedErrorBatch[];
  /** The client-items messages published (sessions, feedback, check-ins; issue 40). */
  clientItems(): clientItems.ClientItemsMessage[];
}

export function createRecordingBus(opts: { record?: boolean } = {}): RecordingBus {
  const record = opts.record ?? true;
  const bus: RecordingBus = {
    adapter: 'in-process',
    published: [],
    failWith: null,
    async publish(topic, messages) {
      if (bus.failWith) throw bus.failWith;
      if (record) bus.published.push({ topic, messages });
    },
    async subscribe(): Promise<Subscription> {
      return { stop: async () => undefined };
    },
    async close() {},
    batches: () => bus.published.filter((p) => p.topic === ERRORS_TOPIC).flatMap((p) => p.messages.map((m) => decodeErrorBatch(m.value)!)),
    clientItems: () => bus.published.filter((p) => p.topic === clientItems.TOPIC).flatMap((p) => p.messages.map((m) => clientItems.decode(m.value)!)),
  };
  return bus;
}

/** Fixed one-window counters in memory (tests only; the memory-limiter adapter is the product's). */
export function createCountingLimiter(): RateLimiter & { hits: Map<string, number> } {
  const hits = new Map<string, number>();
  const hitNow = (key: string, limit: number, windowMs: number): RateDecision => {
    const n = (hits.get(key) ?? 0) + 1;
    hits.set(key, n);
    const allowed = n <= limit;
    return { allowed, remaining: Math.max(0, limit - n), retryAfterSec: allowed ? 1 : Math.ceil(windowMs / 1000) };
  };
  return {
    adapter: 'memory',
    hits,
    hit: async (key, limit, windowMs) => hitNow(key, limit, windowMs),
    hitAll: async (all) => all.map((h) => hitNow(h.key, h.limit, h.windowMs)),
    async close() {},
  };
}

/** A limiter that always allows: benches of the validation path. */
export const allowAllLimiter: RateLimiter = {
  adapter: 'memory',
  hit: async (_key: string, limit: number) => ({ allowed: true, remaining: limit, retryAfterSec: 1 }),
  hitAll: async (all) => all.map((h) => ({ allowed: true, remaining: h.limit, retryAfterSec: 1 })),
  close: async () => undefined,
};

/** A ready production deploy made live for the project, serving `artifactDir`: the project has a site. */
export async function addLiveSite(platform: Platform, projectId: string, artifactDir: string): Promise<{ deployId: string }> {
  const deployId = newId('dep_');
  await platform.db.query(
    `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'main', 'production', 'ready', $3, now())`,
    [deployId, projectId, artifactDir],
  );
  await platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [projectId, deployId]);
  return { deployId };
}

/** A ready preview deploy serving `artifactDir` on its own host: `host` is its label under SITES_DOMAIN (`dep-…`). */
export async function addPreviewSite(platform: Platform, projectId: string, artifactDir: string): Promise<{ deployId: string; host: string }> {
  const deployId = newId('dep_');
  await platform.db.query(
    `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'feature', 'preview', 'ready', $3, now())`,
    [deployId, projectId, artifactDir],
  );
  return { deployId, host: deployId.replace(/_/g, '-') };
}

/** The project's number: the project id of its Sentry DSNs. */
export async function projectNumberOf(platform: Platform, projectId: string): Promise<string> {
  const r = await platform.db.query<{ number: string | number }>('SELECT number FROM projects WHERE id = $1', [projectId]);
  return String(r.rows[0]!.number);
}
