import { createHash } from 'node:crypto';
import { lstat, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

/**
 * Where the build cache (issue 42, builder/build-cache/) keeps a project's archives: DATA_DIR/build-cache/<projectId>/,
 * one per branch, named by the branch's hash. Shared by the builder, which restores and saves them, and the API,
 * which clears a project's (DELETE .../deploys/cache).
 */
export const buildCacheDir = (dataDir: string) => path.join(path.resolve(dataDir), 'build-cache');

/** The archive of a project's branch. */
export function buildCacheFile(dir: string, projectId: string, branch: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(projectId)) throw new Error(`not a project id: ${projectId}`);
  return path.join(dir, projectId, `${createHash('sha256').update(branch).digest('hex').slice(0, 32)}.tar`);
}

/**
 * "Build without the cache" (`POST .../deploys?cache=false`): a mark DATA_DIR/build-cache/<projectId>/<deployId>.skip
 * written before the deploy is queued (so before any builder can claim it) and taken by the builder that builds it,
 * which then restores nothing (and saves afresh). A mark no build took is removed after 6 h by the eviction.
 */
export function cacheSkipMark(dir: string, projectId: string, deployId: string): string {
  if (!/^[A-Za-z0-9_-]+$/.test(deployId)) throw new Error(`not a deploy id: ${deployId}`);
  return path.join(path.dirname(buildCacheFile(dir, projectId, '')), `${deployId}.skip`);
}

export async function markCacheSkipped(dir: string, projectId: string, deployId: string): Promise<void> {
  const mark = cacheSkipMark(dir, projectId, deployId);
  await mkdir(path.dirname(mark), { recursive: true, mode: 0o700 });
  await writeFile(mark, '');
}

export async function unmarkCacheSkipped(dir: string, projectId: string, deployId: string): Promise<void> {
  await rm(cacheSkipMark(dir, projectId, deployId), { force: true });
}

/** True when the deploy was queued without the cache; the mark is gone afterwards. */
export async function takeCacheSkipped(dir: string, projectId: string, deployId: string): Promise<boolean> {
  const mark = cacheSkipMark(dir, projectId, deployId);
  if (!(await lstat(mark).catch(() => undefined))) return false;
  await rm(mark, { force: true });
  return true;
}

/** Every cache of a project gone. */
export async function clearBuildCache(dir: string, projectId: string): Promise<void> {
  await rm(path.dirname(buildCacheFile(dir, projectId, '')), { recursive: true, force: true });
}
