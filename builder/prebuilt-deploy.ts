import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import type { Logger } from '../platform/logger.ts';
import type { Platform } from '../platform/platform.ts';
import { deployQueueRepository } from '../domain/deploys/deploy-queue-repository.ts';
import type { DeployPrebuilt, PrebuiltRequest } from '../domain/deploys/prebuilt.ts';
import { DISK_FULL_RETRY_AFTER_SEC, ServiceError } from '../schemas/error-codes.ts';
import { LIMITS } from '../schemas/limits.ts';
import { unpackUpload, type UploadRefusal } from './artifact-upload.ts';
import { DISK_FULL_BUILD_LINE, finishBuild, type DeployOutcome } from './build-deploy.ts';
import { createBuildLog } from './build-log.ts';
import { buildsRepository } from './builds-repository.ts';
import { createOutputQuota } from './output-quota.ts';

/**
 * A prebuilt upload becomes a deploy (issue 42, "Deploy without git": `cx deploy --prebuilt ./dist`), no build run:
 *   1. which deploy   the branch (default: the project's default branch) and environment (default: production on the
 *                     default branch, preview otherwise); a production deploy while one is queued or building is 409
 *                     production_deploy_busy before a byte is read; a disk under the build floor is 503
 *   2. unpack         the .tar.gz streamed into a folder of DATA_DIR/uploads (artifact-upload.ts: files and
 *                     directories only, the artifact limits and the room the quotas leave). A refused upload leaves
 *                     nothing: no deploy row, no files (400 invalid_artifact, or 413 payload_too_large, with `reason`)
 *   3. the deploy     inserted `building`, leased to this process (trigger `upload`); the production index may still
 *                     refuse it (409); the files moved to artifacts/<deployId> and charged to the project and account
 *                     (output-quota.ts)
 *   4. finish         as a build ends (build-deploy.ts finishBuild): source maps kept, the site compiled, ready, live
 *                     for production, deploy.succeeded, the lease renewed while that runs
 * Answers the deploy's id: ready, or failed when the quota charge lost a race with another output (quota_exceeded).
 */
/** Compressed bytes one upload may take (the inflated output is held to ARTIFACT_MAX_BYTES as well). */
export const PREBUILT_MAX_UPLOAD_BYTES = 100 * 1024 * 1024;

/** Refusals of uploads since start, by reason (a counter per reason; README, "Deploy a built directory"). */
export const prebuiltRefusals: Partial<Record<UploadRefusal | 'production_deploy_busy' | 'disk_full', number>> = {};
const counted = (reason: keyof typeof prebuiltRefusals) => (prebuiltRefusals[reason] = (prebuiltRefusals[reason] ?? 0) + 1);

const TOO_LARGE = new Set<UploadRefusal>(['upload_too_large', 'too_many_files', 'file_too_large', 'artifact_too_large', 'quota_exceeded']);

type PrebuiltPlatform = Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'disk' | 'logger' | 'outbound'>;

/** The API's prebuilt uploads (domain/deploys/prebuilt.ts), given to it by the composition root. */
export function prebuiltDeployer(platform: PrebuiltPlatform): DeployPrebuilt {
  const log = platform.logger.child({ component: 'prebuilt-uploads' });
  // A process killed mid-upload leaves its staging folder: the next start removes the ones past any upload's time.
  void sweepStaleUploads(path.resolve(platform.config.DATA_DIR), platform.clock.now()).catch((err) =>
    log.warn({ err }, 'stale upload folders could not be removed'),
  );
  return (body, req) => deployPrebuilt(platform, log, body, req);
}

/** Staging folders older than this are no upload in flight (an upload is bounded to PREBUILT_MAX_UPLOAD_BYTES). */
export const STALE_UPLOAD_MS = 6 * 60 * 60 * 1000;

/** Removes DATA_DIR/uploads/upl_* folders last changed more than STALE_UPLOAD_MS ago; answers how many went. */
export async function sweepStaleUploads(dataDir: string, now: number): Promise<number> {
  const dir = path.join(dataDir, 'uploads');
  const names = await readdir(dir).catch(() => [] as string[]);
  let removed = 0;
  for (const name of names) {
    if (!name.startsWith('upl_')) continue;
    const at = await stat(path.join(dir, name)).then(
      (s) => s.mtimeMs,
      () => undefined,
    );
    if (at === undefined || now - at < STALE_UPLOAD_MS) continue;
    await rm(path.join(dir, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

async function deployPrebuilt(platform: PrebuiltPlatform, log: Logger, body: Readable, req: PrebuiltRequest): Promise<string> {
  const { db, clock, config } = platform;
  // 1. which deploy
  const defaultBranch = await deployQueueRepository.defaultBranch(db, req.projectId);
  if (defaultBranch === undefined) throw new ServiceError('not_found', 'no such project');
  const branch = req.branch ?? defaultBranch;
  const environment = req.environment ?? (branch === defaultBranch ? 'production' : 'preview');
  const busy = () => {
    counted('production_deploy_busy');
    return new ServiceError('production_deploy_busy', 'a production deploy of this project is already queued or building', {
      body: { activeDeployId: active },
    });
  };
  let active = environment === 'production' ? await deployQueueRepository.activeProduction(db, req.projectId) : undefined;
  if (active) throw busy();
  const quota = createOutputQuota(platform);
  if (await quota.belowFloor()) {
    counted('disk_full');
    throw new ServiceError('unavailable', DISK_FULL_BUILD_LINE.replace('the build did not run', 'the upload was not taken'), {
      retryAfterSec: DISK_FULL_RETRY_AFTER_SEC,
    });
  }

  // 2. unpack
  const dataDir = path.resolve(config.DATA_DIR);
  const staging = path.join(dataDir, 'uploads', `upl_${randomBytes(8).toString('hex')}`);
  await mkdir(path.dirname(staging), { recursive: true });
  const limits = { maxBytes: config.ARTIFACT_MAX_BYTES, maxFiles: config.ARTIFACT_MAX_FILES, maxFileBytes: config.ARTIFACT_MAX_FILE_BYTES };
  const unpacked = await unpackUpload(body, {
    dest: staging,
    limits,
    // gzip cannot make incompressible bytes much larger: an upload past the artifact's own bound plus its headers is refused early.
    maxUploadBytes: Math.min(PREBUILT_MAX_UPLOAD_BYTES, limits.maxBytes + limits.maxFiles * 4096 + 64 * 1024),
    room: await quota.room({ projectId: req.projectId, deployId: '' }),
  }).catch(async (err: unknown) => {
    await rm(staging, { recursive: true, force: true });
    throw err;
  });
  if (!unpacked.ok) {
    await rm(staging, { recursive: true, force: true });
    counted(unpacked.reason);
    log.info({ projectId: req.projectId, reason: unpacked.reason, entry: unpacked.entry }, 'prebuilt upload refused');
    const code = TOO_LARGE.has(unpacked.reason) ? 'payload_too_large' : 'invalid_artifact';
    throw new ServiceError(code, `${unpacked.message}. Nothing was deployed`, { body: { reason: unpacked.reason, entry: unpacked.entry ?? null } });
  }

  // 3. the deploy
  const owner = `upl_${process.pid}_${randomBytes(6).toString('hex')}`;
  const leaseMs = LIMITS.deploys.leaseMs;
  const now = clock.now();
  const row = await deployQueueRepository.insertUploaded(db, {
    projectId: req.projectId,
    branch,
    environment,
    gitSha: req.gitSha ?? null,
    triggerId: req.triggerId,
    owner,
    now,
    leaseUntil: now + leaseMs,
  });
  if (!row) {
    await rm(staging, { recursive: true, force: true });
    active = await deployQueueRepository.activeProduction(db, req.projectId);
    throw busy();
  }
  const renew = setInterval(() => void buildsRepository.renew(db, owner, [row.id], clock.now() + leaseMs).catch(() => undefined), leaseMs / 3);
  try {
    const artifactDir = path.join(dataDir, 'artifacts', row.id);
    await mkdir(path.dirname(artifactDir), { recursive: true });
    await rename(staging, artifactDir);
    const buildLog = createBuildLog({
      analytics: platform.analytics,
      projectId: req.projectId,
      deployId: row.id,
      secrets: [],
      now: () => clock.now(),
      maxLines: LIMITS.deploys.logLinesPerDeploy,
      maxLineChars: LIMITS.deploys.logLineChars,
    });
    buildLog.line('system', `prebuilt upload: ${unpacked.files} files, ${unpacked.bytes} bytes; no build ran`);
    if (unpacked.skipped.length) buildLog.line('system', `left out (.git): ${unpacked.skipped.slice(0, 20).join(', ')}`);
    const charged = await quota.charge(
      { projectId: req.projectId, deployId: row.id, artifactDir, note: (t) => buildLog.line('system', t) },
      { ok: true, gitSha: req.gitSha ?? '', files: unpacked.files, bytes: unpacked.bytes },
    );
    const outcome: DeployOutcome = charged.ok
      ? { status: 'ready', artifactDir: path.relative(dataDir, artifactDir) }
      : { status: 'failed', reason: charged.reason };
    // 4. finish
    const claimed = { id: row.id, projectId: req.projectId, projectSlug: '', branch, environment, createdAt: now };
    await finishBuild({ platform, log, owner, dataDir, quota }, claimed, outcome, buildLog, new AbortController().signal, () => false);
  } finally {
    clearInterval(renew);
    await rm(staging, { recursive: true, force: true });
  }
  return row.id;
}
