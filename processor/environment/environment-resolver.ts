import type { Queryable } from '../../platform/ports/relational-store.ts';
import { systemClock, type Clock } from '../../platform/clock.ts';
import type { Environment } from '../../schemas/error-event.ts';
import { resolveEnvironment, type DeployRef, type ProjectDomains } from './environment.ts';
import { environmentRepository, type EnvironmentRepository } from './environment-repository.ts';

/**
 * Environment stamping (spec §7.4) for a batch of events of any family (errors, analytics): the projects' domains
 * and the deploys the events name are read in at most two queries, then each event is resolved; undefined for an
 * event whose project no longer exists.
 *
 * Project domains are kept for DOMAINS_TTL_MS (like the edge's settings cache): a batch of a busy project does not
 * re-read them, and a domain change applies within that time. Deploys are always read fresh, so an event naming a
 * deploy that was just created finds it.
 */
export const DOMAINS_TTL_MS = 2_000;
/** SITES_DOMAIN's default (platform/config.ts), for pipelines built without a configuration (tests, benches). */
const DEFAULT_SITES_DOMAIN = 'localhost';

export interface EnvironmentInput {
  projectId: string;
  originHost: string | null;
  deployId?: string;
  gitSha?: string;
}

export type EnvironmentResolver = (events: EnvironmentInput[]) => Promise<Array<Environment | undefined>>;

export function createEnvironmentResolver(deps: {
  db: Queryable;
  environment?: EnvironmentRepository;
  clock?: Clock;
  domainsTtlMs?: number;
  sitesDomain?: string;
}): EnvironmentResolver {
  const repo = deps.environment ?? environmentRepository;
  const clock = deps.clock ?? systemClock;
  const ttl = deps.domainsTtlMs ?? DOMAINS_TTL_MS;
  const cache = new Map<string, { domains: ProjectDomains | undefined; loadedAt: number }>();

  async function projectDomains(projectIds: string[]): Promise<Map<string, ProjectDomains>> {
    const now = clock.now();
    const missing = projectIds.filter((id) => {
      const c = cache.get(id);
      return !c || now - c.loadedAt >= ttl;
    });
    if (missing.length) {
      const found = await repo.projectDomains(deps.db, missing, deps.sitesDomain ?? DEFAULT_SITES_DOMAIN);
      for (const id of missing) cache.set(id, { domains: found.get(id), loadedAt: now });
      if (cache.size > 100_000) for (const [id, c] of cache) if (now - c.loadedAt >= ttl) cache.delete(id);
    }
    const out = new Map<string, ProjectDomains>();
    for (const id of projectIds) {
      const d = cache.get(id)?.domains;
      if (d) out.set(id, d);
    }
    return out;
  }

  return async function resolve(events) {
    if (!events.length) return [];
    const projectIds = [...new Set(events.map((e) => e.projectId))];
    const domains = await projectDomains(projectIds);

    const serverEvents = events.filter((e) => !e.originHost && (e.deployId || e.gitSha));
    const deploysByProject = new Map<string, { byId: Map<string, DeployRef>; bySha: Map<string, DeployRef> }>();
    if (serverEvents.length) {
      const ids = [...new Set(serverEvents.map((e) => e.deployId).filter((x): x is string => !!x))];
      const shas = [...new Set(serverEvents.map((e) => e.gitSha?.toLowerCase()).filter((x): x is string => !!x))];
      // Oldest first, so for a sha deployed more than once the most recent deploy wins.
      for (const r of await repo.deploys(deps.db, projectIds, ids, shas)) {
        let m = deploysByProject.get(r.projectId);
        if (!m) deploysByProject.set(r.projectId, (m = { byId: new Map(), bySha: new Map() }));
        const ref: DeployRef = { id: r.id, gitSha: r.gitSha, environment: r.environment };
        m.byId.set(r.id, ref);
        if (r.gitSha) m.bySha.set(r.gitSha, ref);
      }
    }

    const none = { byId: new Map<string, DeployRef>(), bySha: new Map<string, DeployRef>() };
    return events.map((e) => {
      const d = domains.get(e.projectId);
      if (!d) return undefined;
      return resolveEnvironment({ originHost: e.originHost, deployId: e.deployId, gitSha: e.gitSha }, d, deploysByProject.get(e.projectId) ?? none);
    });
  };
}
