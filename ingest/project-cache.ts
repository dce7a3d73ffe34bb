import type { Platform } from '../platform/platform.ts';
import { platformHostPatterns } from '../platform/sites/platform-hosts.ts';
import { sitesRepository } from '../platform/sites/sites-repository.ts';
import { LIMITS } from '../schemas/limits.ts';
import { tokenHash } from '../platform/tokens.ts';
import { ENVIRONMENTS } from '../schemas/error-event.ts';
import { monthlyCapFor, usageMonth } from '../domain/usage-month.ts';
import { createChangeGate, startRefreshes } from './edge-change-gate.ts';
import { edgeRepository, type ErrorUsageRow } from './edge-repository.ts';

/**
 * The edge's view of keys, project settings and cap state, held in memory so a request does no
 * database I/O. Every SETTINGS_REFRESH_MS a refresh reads the `edge` change stamp and the month's usage (one
 * statement: edgeRepository.stampAndUsage); it reloads the keys with their projects and the platform's hosts only
 * when the stamp moved (a key made or revoked, a project's settings or domains, a deploy ready: edge-change-gate.ts)
 * or their last load is LIMITS.edgeFullReloadMs old. So a
 * revoked key, a paused project or changed origins reach the edge with the next refresh, and at rest a refresh is
 * one small read. The usage is read every refresh: the processor writes it with every batch, which no stamp
 * follows (a trigger there would make every batch of every processor wait on one row). A failed refresh keeps the
 * last good snapshot (the edge keeps serving) and logs.
 */
export interface EdgeProject {
  id: string;
  /** The numeric id of the project's Sentry DSNs (the path's project id on /api/:projectId/...). */
  number: string;
  productionDomains: string[];
  previewDomains: string[];
  paused: boolean;
  /** Empty: every origin may post (§7.3). */
  ingestOrigins: string[];
  /**
   * Monthly cap reached, per environment, as of the last refresh (the processor enforces exactly).
   * `unknown` has its own usage row and the cap domain/usage-month.ts gives it.
   */
  capped: { production: boolean; preview: boolean; unknown: boolean };
  /** The month's analytics events reached LIMITS.analyticsMonthlyQuota, as of the last refresh. */
  analyticsQuotaReached: boolean;
}

export interface EdgeKey {
  keyId: string;
  project: EdgeProject;
}

export interface ProjectCache {
  /** The live ingest key with this token hash, or undefined (unknown or revoked). */
  byTokenHash(hash: string): EdgeKey | undefined;
  /**
   * The key of a raw token. Tokens that resolved are remembered for the life of the snapshot (at most one per
   * key in it), so a client's requests pay the SHA-256 once per refresh; a new snapshot starts over, so a
   * revoked key stops resolving with the refresh that drops it, as through byTokenHash.
   */
  byToken(token: string): EdgeKey | undefined;
  /**
   * The key a site's same-origin path (§7.1, `/service/v1/errors/i`) posts with: the project's oldest live ingest
   * key, attached by the edge so no key is in the page. Undefined when the project has none.
   */
  siteKeyOf(projectId: string): EdgeKey | undefined;
  /**
   * Reload everything now, whatever the stamp says; resolves when the new snapshot is in place (rejects if the load
   * failed). Waits for a refresh under way, so what was committed before the call is in it.
   */
  refresh(): Promise<void>;
  /** Successful refreshes so far (the first load, then each tick or refresh() that read what it reads). */
  readonly loads: number;
  /** Successful loads of the keys and hosts so far (the first, then when the stamp moved, it was old or refresh()). */
  readonly fullLoads: number;
  /**
   * The `edge` change stamp as the last refresh read it (undefined before the first). The flag cache follows the same
   * stamp and reads it here instead of asking the database again (flag-cache.ts).
   */
  readonly stamp: string | null | undefined;
  stop(): void;
}

interface Snapshot {
  byHash: Map<string, EdgeKey>;
  /** Project id -> its oldest live ingest key (the same-origin path's). */
  siteKeys: Map<string, EdgeKey>;
  /** Every project of the snapshot: each refresh sets their cap state in place. */
  projects: Map<string, EdgeProject>;
}

/** What the month's usage says: cap state per project (absent: under every cap), and projects over the analytics quota. */
interface Usage {
  capped: Map<string, EdgeProject['capped']>;
  overQuota: Set<string>;
}

/** What the month's usage rows say, as the edge holds it. */
function capState(errorUsage: ErrorUsageRow[], overQuota: string[]): Usage {
  const caps = LIMITS.errorCaps;
  const capped = new Map<string, EdgeProject['capped']>();
  for (const u of errorUsage) {
    const c = capped.get(u.project_id) ?? { production: false, preview: false, unknown: false };
    const env = ENVIRONMENTS.find((e) => e === u.environment);
    if (env && Number(u.accepted) >= monthlyCapFor(caps, env)) c[env] = true;
    capped.set(u.project_id, c);
  }
  return { capped, overQuota: new Set(overQuota) };
}

/** Set each project's cap state: in place, so keys remembered by byToken see it too. */
function applyUsage(snapshot: Snapshot, usage: Usage): void {
  for (const project of snapshot.projects.values()) {
    project.capped = usage.capped.get(project.id) ?? { production: false, preview: false, unknown: false };
    project.analyticsQuotaReached = usage.overQuota.has(project.id);
  }
}

/** The keys with their projects and the platform's hosts for them (cap state unset: applyUsage sets it). */
async function loadKeys(platform: Pick<Platform, 'config' | 'db'>): Promise<Snapshot> {
  const [keys, hosts] = await Promise.all([edgeRepository.ingestKeys(platform.db), sitesRepository.platformHosts(platform.db, null)]);
  const projects = new Map<string, EdgeProject>();
  const map = new Map<string, EdgeKey>();
  const siteKeys = new Map<string, EdgeKey>();
  for (const r of keys) {
    let project = projects.get(r.project_id);
    if (!project) {
      const own = platformHostPatterns(hosts.get(r.project_id), platform.config.SITES_DOMAIN);
      project = {
        id: r.project_id,
        number: String(r.project_number),
        productionDomains: [...(r.production_domains ?? []).map((d) => d.toLowerCase()), ...own.production],
        previewDomains: [...(r.preview_domains ?? []).map((d) => d.toLowerCase()), ...own.preview],
        paused: r.paused ?? false,
        ingestOrigins: (r.ingest_origins ?? []).map((d) => d.toLowerCase()),
        capped: { production: false, preview: false, unknown: false },
        analyticsQuotaReached: false,
      };
      projects.set(r.project_id, project);
    }
    const key = { keyId: r.key_id, project };
    map.set(r.token_hash, key);
    if (!siteKeys.has(r.project_id)) siteKeys.set(r.project_id, key);
  }
  return { byHash: map, siteKeys, projects };
}

/** Load the first snapshot (throws if it cannot: the edge must not listen blind), then refresh in the background. */
export async function startProjectCache(
  platform: Pick<Platform, 'clock' | 'config' | 'db' | 'logger'>,
  opts: { refreshMs?: number } = {},
): Promise<ProjectCache> {
  const log = platform.logger.child({ component: 'ingest-project-cache' });
  const refreshMs = opts.refreshMs ?? platform.config.SETTINGS_REFRESH_MS;
  const gate = createChangeGate(platform);
  /** Empty until the first load, which startProjectCache awaits. */
  let snapshot: Snapshot = { byHash: new Map(), siteKeys: new Map(), projects: new Map() };
  /** Tokens of this snapshot that resolved, so each is hashed once per snapshot. */
  let keysByToken = new Map<string, EdgeKey>();
  let loads = 0;
  let fullLoads = 0;
  /** The `edge` stamp as the last refresh read it (undefined before the first): the flag cache's too. */
  let lastStamp: string | null | undefined;

  /** One refresh: the stamp and the usage (one statement), and the keys too when the gate says so (or `full`). */
  const load = async (full: boolean): Promise<void> => {
    const read = await edgeRepository.stampAndUsage(platform.db, usageMonth(platform.clock.now()), LIMITS.analyticsMonthlyQuota);
    const { stamp } = read;
    // The flag cache's stamp from here on, whether or not the keys' load below succeeds (it was read before its data).
    lastStamp = stamp;
    const usage = capState(read.errorUsage, read.overQuota);
    let next = snapshot;
    if (full || gate.due(stamp)) next = await loadKeys(platform);
    applyUsage(next, usage);
    if (next !== snapshot) {
      snapshot = next;
      // A new snapshot of keys: tokens resolve afresh, so a revoked key stops resolving with it.
      keysByToken = new Map();
      gate.loaded(stamp);
      fullLoads++;
    }
    loads++;
  };

  await load(true);

  let failing = false;
  const refreshes = startRefreshes(load, refreshMs, {
    ok() {
      if (failing) log.info('settings refresh recovered');
      failing = false;
    },
    failed(err) {
      failing = true;
      log.error({ err }, 'settings refresh failed; keeping the last good snapshot');
    },
  });

  return {
    byTokenHash: (hash) => snapshot.byHash.get(hash),
    siteKeyOf: (projectId) => snapshot.siteKeys.get(projectId),
    byToken(token) {
      let key = keysByToken.get(token);
      if (key === undefined) {
        key = snapshot.byHash.get(tokenHash(token));
        if (key !== undefined) keysByToken.set(token, key);
      }
      return key;
    },
    refresh: () => refreshes.run(true),
    get loads() {
      return loads;
    },
    get fullLoads() {
      return fullLoads;
    },
    get stamp() {
      return lastStamp;
    },
    stop: refreshes.stop,
  };
}
