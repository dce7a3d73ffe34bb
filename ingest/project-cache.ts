import type { Platform } from '../platform/platform.ts';
import { platformHostPatterns } from '../platform/sites/platform-hosts.ts';
import { sitesRepository } from '../platform/sites/sites-repository.ts';
import { LIMITS } from '../schemas/limits.ts';
import { tokenHash } from '../platform/tokens.ts';
import { ENVIRONMENTS } from '../schemas/error-event.ts';
import { monthlyCapFor, usageMonth } from '../domain/usage-month.ts';
import { edgeRepository } from './edge-repository.ts';

/**
 * The edge's view of keys, project settings and cap state, held in memory so a request does no
 * database I/O. A background refresh reloads the whole snapshot every SETTINGS_REFRESH_MS, so a
 * revoked key, a paused project or changed origins reach the edge within a few seconds. A failed
 * refresh keeps the last good snapshot (the edge keeps serving) and logs.
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
  /** Reload now; resolves when the new snapshot is in place (rejects if the load failed). */
  refresh(): Promise<void>;
  /** Successful loads so far. */
  readonly loads: number;
  stop(): void;
}

interface Snapshot {
  byHash: Map<string, EdgeKey>;
  /** Project id -> its oldest live ingest key (the same-origin path's). */
  siteKeys: Map<string, EdgeKey>;
}

async function loadSnapshot(platform: Pick<Platform, 'clock' | 'config' | 'db'>): Promise<Snapshot> {
  const month = usageMonth(platform.clock.now());
  const [keys, usage, analyticsUsage, hosts] = await Promise.all([
    edgeRepository.ingestKeys(platform.db),
    edgeRepository.errorUsage(platform.db, month),
    edgeRepository.analyticsOverQuota(platform.db, month, LIMITS.analyticsMonthlyQuota),
    sitesRepository.platformHosts(platform.db, null),
  ]);
  const overQuota = new Set(analyticsUsage);
  const caps = LIMITS.errorCaps;
  const capped = new Map<string, EdgeProject['capped']>();
  for (const u of usage) {
    const c = capped.get(u.project_id) ?? { production: false, preview: false, unknown: false };
    const env = ENVIRONMENTS.find((e) => e === u.environment);
    if (env && Number(u.accepted) >= monthlyCapFor(caps, env)) c[env] = true;
    capped.set(u.project_id, c);
  }
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
        capped: capped.get(r.project_id) ?? { production: false, preview: false, unknown: false },
        analyticsQuotaReached: overQuota.has(r.project_id),
      };
      projects.set(r.project_id, project);
    }
    const key = { keyId: r.key_id, project };
    map.set(r.token_hash, key);
    if (!siteKeys.has(r.project_id)) siteKeys.set(r.project_id, key);
  }
  return { byHash: map, siteKeys };
}

/** Load the first snapshot (throws if it cannot: the edge must not listen blind), then refresh in the background. */
export async function startProjectCache(
  platform: Pick<Platform, 'clock' | 'config' | 'db' | 'logger'>,
  opts: { refreshMs?: number } = {},
): Promise<ProjectCache> {
  const log = platform.logger.child({ component: 'ingest-project-cache' });
  const refreshMs = opts.refreshMs ?? platform.config.SETTINGS_REFRESH_MS;
  let snapshot = await loadSnapshot(platform);
  /** Tokens of this snapshot that resolved, so each is hashed once per snapshot. */
  let keysByToken = new Map<string, EdgeKey>();
  let loads = 1;
  let running: Promise<void> | undefined;
  let failing = false;

  const refresh = (): Promise<void> => {
    running ??= loadSnapshot(platform)
      .then((s) => {
        snapshot = s;
        keysByToken = new Map();
        loads++;
        if (failing) log.info('settings refresh recovered');
        failing = false;
      })
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  const timer = setInterval(() => {
    refresh().catch((err) => {
      failing = true;
      log.error({ err }, 'settings refresh failed; keeping the last good snapshot');
    });
  }, refreshMs);
  timer.unref();

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
    refresh,
    get loads() {
      return loads;
    },
    stop: () => clearInterval(timer),
  };
}
