import { hash } from 'node:crypto';
import type { Platform } from '../platform/platform.ts';
import { FlagDefinitionSchema, type FlagDefinition } from '../schemas/flags.ts';
import type { Environment } from '../schemas/error-event.ts';
import { createChangeGate, startRefreshes } from './edge-change-gate.ts';
import { edgeRepository } from './edge-repository.ts';

/**
 * The edge's copy of every project's feature flags, and of the newest ready deploys of projects that have flags
 * (so a server's call naming its deploy is evaluated in that deploy's environment, §7.4). Every SETTINGS_REFRESH_MS a
 * refresh looks at the `edge` change stamp (as the project cache last read it, in the edge; or read itself) and
 * reloads whole only when it moved or the last load is LIMITS.edgeFullReloadMs old (edge-change-gate.ts), so
 * evaluation does no I/O, an API change shows within a few seconds, and at rest a refresh asks the database nothing;
 * a failed refresh keeps the last good copy.
 */
/** One project's flags; the same object until something of the project's flags or deploys changes. */
export interface ProjectFlags {
  flags: Map<string, FlagDefinition>;
  /** deploy id and lower-case git sha -> environment (the newest deploy of a sha wins). */
  deploys: Map<string, 'production' | 'preview'>;
}

export interface FlagCache {
  of(projectId: string): ProjectFlags | undefined;
  environmentOfDeploy(projectId: string, deployIdOrSha: string): Environment | undefined;
  /** Reload now, whatever the stamp says (after a refresh under way). */
  refresh(): Promise<void>;
  /** Successful loads of the flags and deploys so far (the first, then when the stamp moved, it was old or refresh()). */
  readonly fullLoads: number;
  stop(): void;
}

/** Ready deploys per flagged project kept for environment stamping. */
const DEPLOYS_PER_PROJECT = 100;

async function load(platform: Pick<Platform, 'db'>, previous?: Loaded): Promise<Loaded> {
  const [flags, deploys] = await Promise.all([edgeRepository.flagDefinitions(platform.db), edgeRepository.flaggedDeploys(platform.db, DEPLOYS_PER_PROJECT)]);
  // Nothing changed: keep the same objects, so answers cached against them stay valid (flags-route.ts).
  const fingerprint = hash('sha1', JSON.stringify([flags, deploys]), 'hex');
  if (previous && previous.fingerprint === fingerprint) return previous;
  const out = new Map<string, ProjectFlags>();
  const entry = (id: string) => {
    let p = out.get(id);
    if (!p) out.set(id, (p = { flags: new Map(), deploys: new Map() }));
    return p;
  };
  for (const r of flags) {
    const def = FlagDefinitionSchema.safeParse(typeof r.definition === 'string' ? JSON.parse(r.definition) : r.definition);
    if (def.success) entry(r.project_id).flags.set(def.data.key, def.data);
  }
  // Oldest first: a sha deployed twice ends with its newest deploy's environment.
  for (const d of deploys) {
    const p = entry(d.project_id);
    p.deploys.set(d.id, d.environment);
    if (d.git_sha) p.deploys.set(d.git_sha, d.environment);
  }
  return { fingerprint, projects: out };
}

interface Loaded {
  fingerprint: string;
  projects: Map<string, ProjectFlags>;
}

/**
 * `opts.stamp`: the `edge` change stamp as another reader last read it (the project cache's, ProjectCache.stamp), so
 * that at rest this cache asks the database nothing; without it, each refresh reads the stamp itself.
 */
export async function startFlagCache(
  platform: Pick<Platform, 'clock' | 'config' | 'db' | 'logger'>,
  opts: { stamp?: () => string | null | undefined } = {},
): Promise<FlagCache> {
  const log = platform.logger.child({ component: 'ingest-flag-cache' });
  const gate = createChangeGate(platform, opts.stamp);
  let fullLoads = 0;
  const reload = async (stamp: string | null, previous?: Loaded) => {
    const loaded = await load(platform, previous);
    gate.loaded(stamp);
    fullLoads++;
    return loaded;
  };
  let snapshot = await reload(await gate.read());
  /** One refresh: the stamp, and the flags too when the gate says so (or `full`). */
  const refreshOnce = async (full: boolean) => {
    const stamp = await gate.read();
    if (full || gate.due(stamp)) snapshot = await reload(stamp, snapshot);
  };
  const refreshes = startRefreshes(refreshOnce, platform.config.SETTINGS_REFRESH_MS, {
    ok: () => undefined,
    failed: (err) => log.error({ err }, 'flag refresh failed; keeping the last good copy'),
  });
  return {
    of: (projectId) => snapshot.projects.get(projectId),
    environmentOfDeploy: (projectId, ref) =>
      snapshot.projects.get(projectId)?.deploys.get(ref.toLowerCase()) ?? snapshot.projects.get(projectId)?.deploys.get(ref),
    refresh: () => refreshes.run(true),
    get fullLoads() {
      return fullLoads;
    },
    stop: refreshes.stop,
  };
}
