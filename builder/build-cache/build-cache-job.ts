import type { Platform } from '../../platform/platform.ts';
import { deployQueueRepository } from '../../domain/deploys/deploy-queue-repository.ts';
import { buildCacheDir, takeCacheSkipped } from '../../domain/deploys/build-cache-files.ts';
import type { BuildCacheJob } from './build-cache.ts';

/**
 * The build cache of a deploy's project and branch, or undefined when BUILD_CACHE_MAX_MB is 0 (no build cache). A
 * deploy queued with `cache=false` restores nothing (its mark is taken here) and saves afresh.
 */
export async function buildCacheOf(
  platform: Pick<Platform, 'clock' | 'config' | 'db' | 'disk'>,
  d: { id: string; projectId: string; branch: string },
  dataDir: string,
  belowFloor: () => Promise<boolean>,
): Promise<BuildCacheJob | undefined> {
  const { config } = platform;
  if (config.BUILD_CACHE_MAX_MB === 0) return undefined;
  const dir = buildCacheDir(dataDir);
  return {
    dir,
    skipRestore: await takeCacheSkipped(dir, d.projectId, d.id).catch(() => false),
    projectId: d.projectId,
    branch: d.branch,
    defaultBranch: await deployQueueRepository.defaultBranch(platform.db, d.projectId),
    maxBytes: config.BUILD_CACHE_MAX_MB * 1024 * 1024,
    totalBytes: config.BUILD_CACHE_TOTAL_MB * 1024 * 1024,
    diskLow: async () => platform.disk.low || (await belowFloor()),
    now: () => platform.clock.now(),
  };
}
