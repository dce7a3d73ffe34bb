import { rm } from 'node:fs/promises';
import type { Platform } from '../platform/platform.ts';
import type { OutputRoom } from './artifact-copy.ts';
import { removeOutputs } from './artifact-sweep.ts';
import type { BuildOutcome } from './build-run.ts';
import { outputQuotaRepository, type KeptOutput } from './output-quota-repository.ts';

/**
 * Disk quotas (issue 38; README, "Tenants are strangers"): DATA_DIR holds the databases and the bus's log, so what
 * builds leave there is bounded, per deploy, per project, per account, and by the disk's own free space.
 *   1. floor    a build does not start while DATA_DIR's disk has less free than the build floor (the larger of
 *               BUILD_MIN_FREE_MB and DATA_DIR_MIN_FREE_MB): disk_full
 *   2. room     once the build is done, before its output is copied: what the output may take, the smallest of the
 *               project's room (ARTIFACTS_PROJECT_MAX_MB less what the project keeps that cannot be released), the
 *               account's (ARTIFACTS_ACCOUNT_MAX_MB, over every project of the owner) and the disk's (free space
 *               above the floor). artifact-copy.ts checks each file against it before writing it, at its apparent
 *               size, so a sparse file counts as the bytes its copy takes: past it, quota_exceeded (disk_full for the
 *               disk) and the copy is removed
 *   3. charge   once copied, under a lock on the owner's row (charges to one account take turns, whichever builder
 *               makes them): the oldest outputs that are not live are released until the new one fits, this
 *               project's first, then the account's other projects'; if it still does not fit, nothing is released
 *               and it fails quota_exceeded. Otherwise its size is recorded on the deploy, which holds the room while
 *               the deploy finishes (deploys.artifact_bytes)
 *   4. served   the files written beside the output once it is charged, at the end of the build (hosting/build/:
 *               brotli and gzip copies of text files, .cx/site.json): `reserveServing` adds to the deploy's charge
 *               what the copies may take, at most the room left under both limits (and the disk's) with nothing
 *               released for them, and compression stops where that room ends (those files are served
 *               uncompressed); `settleServing` then charges what was written. The manifest is charged as written
 *               (one line a file: bounded by ARTIFACT_MAX_FILES), even past the room
 * Kept outputs are ready deploys' outputs on disk plus outputs charged to deploys still finishing; the sweep
 * (artifact-sweep.ts) measures outputs kept from before sizes were recorded.
 */
export interface OutputQuota {
  /** Whether DATA_DIR's disk is under the build floor now (a build must not start). */
  belowFloor(): Promise<boolean>;
  /** What `deployId`'s output may take (2). */
  room(d: { projectId: string; deployId: string }): Promise<OutputRoom>;
  /** Charge a built output (3): a ready outcome stays ready, or becomes quota_exceeded with its copy removed. */
  charge(d: { projectId: string; deployId: string; artifactDir: string; note(text: string): void }, outcome: BuildOutcome): Promise<BuildOutcome>;
  /** Reserve up to `wanted(its charge)` bytes more on the charged output's deploy for what serving writes beside it (4). */
  reserveServing(d: { projectId: string; deployId: string }, wanted: (charged: number) => number): Promise<ServingReserve>;
  /** Charge the output plus the `written` bytes that serving wrote beside it (4). */
  settleServing(d: { deployId: string }, reserve: ServingReserve, written: number): Promise<void>;
}

/** What reserveServing found: the output's own charge, and the bytes reserved beyond it (0: no room, or not charged). */
export interface ServingReserve {
  base: number | undefined;
  extra: number;
}

export interface QuotaLimits {
  projectBytes: number;
  accountBytes: number;
}

type Fit = { ok: true; release: string[] } | { ok: false; limit: 'project' | 'account'; heldBytes: number };

const MB = 1024 * 1024;
const size = (bytes: number) => (bytes >= 10 * MB ? `${Math.round(bytes / MB)} MB` : `${(bytes / MB).toFixed(1)} MB`);

/**
 * Whether an output of `bytes` fits next to `kept` (the account's outputs, oldest first), and which outputs to release
 * for it: this project's oldest releasable first, then the account's others', only while one of the limits is
 * still exceeded (and only this project's while the project's is).
 */
export function fitOutput(kept: KeptOutput[], projectId: string, bytes: number, limits: QuotaLimits): Fit {
  let project = 0;
  let account = 0;
  for (const k of kept) {
    account += k.bytes;
    if (k.projectId === projectId) project += k.bytes;
  }
  const candidates = [...kept.filter((k) => k.projectId === projectId), ...kept.filter((k) => k.projectId !== projectId)].filter(
    (k) => k.releasable && k.bytes > 0,
  );
  const release: string[] = [];
  for (const k of candidates) {
    const overProject = project + bytes > limits.projectBytes;
    if (!overProject && account + bytes <= limits.accountBytes) break;
    if (overProject && k.projectId !== projectId) break;
    release.push(k.id);
    account -= k.bytes;
    if (k.projectId === projectId) project -= k.bytes;
  }
  if (project + bytes > limits.projectBytes) return { ok: false, limit: 'project', heldBytes: project };
  if (account + bytes > limits.accountBytes) return { ok: false, limit: 'account', heldBytes: account };
  return { ok: true, release };
}

/** The log line of an output that does not fit (quota_exceeded), naming the limit. */
export function quotaMessage(limit: 'project' | 'account', bytes: number, heldBytes: number, limits: QuotaLimits, atLeast = false): string {
  const what =
    limit === 'project'
      ? `the ${size(limits.projectBytes)} a project's kept outputs may take (ARTIFACTS_PROJECT_MAX_MB)`
      : `the ${size(limits.accountBytes)} the kept outputs of all an account's projects may take (ARTIFACTS_ACCOUNT_MAX_MB)`;
  const held = heldBytes > 0 ? `; ${size(heldBytes)} of it is held by outputs that cannot be released (live deploys', deploys finishing)` : '';
  return `quota exceeded: the output (${atLeast ? 'at least ' : ''}${size(bytes)}, at apparent size) does not fit in ${what}${held}. Nothing of it was kept`;
}

export function createOutputQuota(platform: Pick<Platform, 'config' | 'db' | 'disk'>, limits?: QuotaLimits): OutputQuota {
  const { config, db, disk } = platform;
  const quota: QuotaLimits = limits ?? { projectBytes: config.ARTIFACTS_PROJECT_MAX_MB * MB, accountBytes: config.ARTIFACTS_ACCOUNT_MAX_MB * MB };
  const floorBytes = Math.max(config.BUILD_MIN_FREE_MB, config.DATA_DIR_MIN_FREE_MB) * MB;
  /** Free bytes above the floor now; undefined when there is no floor or the free space is not known. */
  const spare = async () => {
    if (floorBytes === 0) return undefined;
    const free = (await disk.check()).freeBytes;
    return free === null ? undefined : free - floorBytes;
  };

  return {
    async belowFloor() {
      const s = await spare();
      return s !== undefined && s < 0;
    },

    async room(d) {
      const kept = await outputQuotaRepository.kept(db, d.projectId, d.deployId);
      // What cannot be released stays whatever the output's size: the room is the limits less that.
      const fixed = kept.filter((k) => !k.releasable);
      const project = fixed.filter((k) => k.projectId === d.projectId).reduce((n, k) => n + k.bytes, 0);
      const account = fixed.reduce((n, k) => n + k.bytes, 0);
      const rooms: OutputRoom[] = [
        { maxBytes: quota.projectBytes - project, reason: 'quota_exceeded', message: (bytes) => quotaMessage('project', bytes, project, quota, true) },
        { maxBytes: quota.accountBytes - account, reason: 'quota_exceeded', message: (bytes) => quotaMessage('account', bytes, account, quota, true) },
      ];
      const s = await spare();
      if (s !== undefined)
        rooms.push({
          maxBytes: Math.max(0, s),
          reason: 'disk_full',
          message: (bytes) =>
            `the output (at least ${size(bytes)}) does not fit in the service's free disk space, less the ${size(floorBytes)} kept free for its databases (BUILD_MIN_FREE_MB). Nothing was deployed; redeploy once space is freed`,
        });
      return rooms.reduce((a, b) => (b.maxBytes < a.maxBytes ? b : a));
    },

    async reserveServing(d, wanted) {
      const disk = await spare();
      return db.transaction(async (tx) => {
        await outputQuotaRepository.lockAccount(tx, d.projectId);
        const base = await outputQuotaRepository.charged(tx, d.deployId);
        if (base === undefined) return { base, extra: 0 };
        let project = 0;
        let account = 0;
        for (const k of await outputQuotaRepository.kept(tx, d.projectId, d.deployId)) {
          account += k.bytes;
          if (k.projectId === d.projectId) project += k.bytes;
        }
        const room = Math.min(quota.projectBytes - project - base, quota.accountBytes - account - base, disk ?? Number.POSITIVE_INFINITY);
        const extra = Math.max(0, Math.min(wanted(base), Math.floor(room)));
        if (extra > 0) await outputQuotaRepository.charge(tx, d.deployId, base + extra);
        return { base, extra };
      });
    },

    async settleServing(d, reserve, written) {
      if (reserve.base === undefined) return;
      await outputQuotaRepository.charge(db, d.deployId, reserve.base + written);
    },

    async charge(d, outcome) {
      if (!outcome.ok) return outcome;
      const charged = await db.transaction(async (tx) => {
        await outputQuotaRepository.lockAccount(tx, d.projectId);
        const fit = fitOutput(await outputQuotaRepository.kept(tx, d.projectId, d.deployId), d.projectId, outcome.bytes, quota);
        if (!fit.ok) return fit;
        const released = await outputQuotaRepository.release(tx, fit.release);
        await outputQuotaRepository.charge(tx, d.deployId, outcome.bytes);
        return { ok: true as const, released };
      });
      if (!charged.ok) {
        d.note(quotaMessage(charged.limit, outcome.bytes, charged.heldBytes, quota));
        await rm(d.artifactDir, { recursive: true, force: true });
        return { ok: false, reason: 'quota_exceeded' };
      }
      if (charged.released.length) {
        // Another project's deploys are only counted: its ids are not this project's members' to see.
        const own = charged.released.filter((r) => r.projectId === d.projectId);
        d.note(
          `released older outputs that were not live to make room: ${own.length ? own.map((r) => r.id).join(', ') : 'none'} of this project, ${charged.released.length - own.length} of the account's other projects`,
        );
        await removeOutputs(db, config.DATA_DIR, charged.released);
      }
      return outcome;
    },
  };
}
