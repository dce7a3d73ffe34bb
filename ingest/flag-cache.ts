import { hash } from 'node:crypto';
import type { Platform } from '../platform/platform.ts';
import { FlagDefinitionSchema, type FlagDefinition } from '../schemas/flags.ts';
import type { Environment } from '../schemas/error-event.ts';
import { edgeRepository } from './edge-repository.ts';

/**
 * The edge's copy of every project's feature flags, and of the newest ready deploys of projects that have flags
 * (so a server's call naming its deploy is evaluated in that deploy's environment, §7.4). Reloaded whole every
 * SETTINGS_REFRESH_MS, so evaluation does no I/O and an API change shows within a few seconds; a failed refresh
 * keeps the last good copy.
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
  refresh(): Promise<void>;
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

export async function startFlagCache(platform: Pick<Platform, 'config' | 'db' | 'logger'>): Promise<FlagCache> {
  const log = platform.logger.child({ component: 'ingest-flag-cache' });
  let snapshot = await load(platform);
  const refresh = async () => {
    snapshot = await load(platform, snapshot);
  };
  const timer = setInterval(
    () => refresh().catch((err) => log.error({ err }, 'flag refresh failed; keeping the last good copy')),
    platform.config.SETTINGS_REFRESH_MS,
  );
  timer.unref();
  return {
    of: (projectId) => snapshot.projects.get(projectId),
    environmentOfDeploy: (projectId, ref) =>
      snapshot.projects.get(projectId)?.deploys.get(ref.toLowerCase()) ?? snapshot.projects.get(projectId)?.deploys.get(ref),
    refresh,
    stop: () => clearInterval(timer),
  };
}
