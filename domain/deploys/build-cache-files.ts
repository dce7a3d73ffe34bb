import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
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

/** Every cache of a project gone. */
export async function clearBuildCache(dir: string, projectId: string): Promise<void> {
  await rm(path.dirname(buildCacheFile(dir, projectId, '')), { recursive: true, force: true });
}
