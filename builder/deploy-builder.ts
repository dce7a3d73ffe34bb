/**
 * The builder role: takes queued deploys and builds them.
 *
 *   1. wake       on a bus message (schemas/bus/deploy-requests.ts) naming a queued deploy, when a build ends, and
 *                 every POLL_MS. Postgres holds the queue: a repeated message changes nothing, and a deploy
 *                 whose message was lost (or taken by a builder that died) is found by the poll once it has
 *                 waited ORPHAN_AFTER_MS
 *   2. claim      under a lease (FOR UPDATE SKIP LOCKED: builders in several processes split the queue),
 *                 while fewer than BUILDS_PER_BUILDER builds run here: the deploys this builder was told
 *                 of first, then, when a build of its own ends, the oldest queued
 *   3. build      (build-deploy.ts) checkout, build command, artifact (build-run.ts), every output line to the build log
 *                 (build-log.ts), the lease renewed every third of its length. While DATA_DIR's disk is low
 *                 (platform/data-dir/disk-space.ts) or under the build floor (BUILD_MIN_FREE_MB) a build does not
 *                 start: the deploy fails as disk_full, with a log line, and can be redeployed once there is room; a
 *                 build whose artifact runs out of space fails the same way. The output is charged to its project
 *                 and account at its apparent size, or fails quota_exceeded (output-quota.ts)
 *   4. finish     ready (artifact kept, its source maps stored privately first: source-maps/) or failed with its
 *                 reason; deploy.succeeded / deploy.failed go out through publishProjectEvent, so webhooks receive them
 *   5. sweep      a building deploy whose lease ran out (its builder was killed) fails as builder_lost,
 *                 which frees the project's production slot; a build asked to cancel (checked every
 *                 CANCEL_POLL_MS) is killed and ends `canceled`
 *   6. guard      every GUARDED_ROLLOUT_SWEEP_MS, production deploys in their guarded rollout window are judged against
 *                 the previous deploy and, degraded, announced and (opted in) rolled back (guarded-rollout/guard-sweep.ts)
 */
import path from 'node:path';
import os from 'node:os';
import { chmod, mkdir } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import type { Platform } from '../platform/platform.ts';
import { CONSUMER_GROUPS } from '../schemas/topics.ts';
import { LIMITS } from '../schemas/limits.ts';
import type { DeployFailureReason } from '../schemas/deploys.ts';
import * as deployRequests from '../schemas/bus/deploy-requests.ts';
import { githubCheckout } from './github-checkout.ts';
import { sweepArtifacts } from './artifact-sweep.ts';
import type { CgroupHost } from './sandbox/build-cgroup.ts';
import { buildsRepository, type ClaimedDeploy, type FinishedDeploy } from './builds-repository.ts';
import { createOutputQuota } from './output-quota.ts';
import { announceDeploy, buildDeploy, type BuildContext, type DeployOutcome } from './build-deploy.ts';
import { buildIsolationOf, reportBuildEnvironment } from './build-environment.ts';
import { startGuardSweep, type GuardSweep } from './guarded-rollout/guard-sweep.ts';

const POLL_MS = 2_000;
/** A queued deploy nobody took for this long is taken by whichever builder polls next. */
const ORPHAN_AFTER_MS = 5_000;
/** How often a builder checks whether one of its running builds was canceled. */
const CANCEL_POLL_MS = 1_000;
/** How often old artifacts are swept (artifact-sweep.ts). */
const SWEEP_MS = 10 * 60 * 1000;
export interface BuildTotals {
  ready: number;
  canceled: number;
  failed: Partial<Record<DeployFailureReason, number>>;
}

export interface StartBuilderOptions {
  /** Defaults to LIMITS.deploys.leaseMs (tests shorten it to see builder_lost quickly). */
  leaseMs?: number;
  /** The bubblewrap binary to probe (tests name a missing one to see sandbox_unavailable). */
  bwrap?: string;
  /** Where builds' cgroups are made (tests name a host without any to see limits_unavailable). */
  cgroupHost?: CgroupHost;
  /** Defaults to GUARDED_ROLLOUT_SWEEP_MS (tests with a manual clock call `guard.sweep()` themselves). */
  guardSweepMs?: number;
}

export interface Builder {
  /** Deploys building in this process. */
  running(): string[];
  /**
   * Builds this builder finished since start, by outcome; `failed` by reason, `builder_lost` counting the deploys
   * whose lease ran out that this builder's sweep failed (GET /metrics).
   */
  stats(): BuildTotals;
  /** Resolves when nothing is building here and nothing queued could be claimed (tests). */
  idle(): Promise<void>;
  /** Stop claiming; builds in flight are killed and left to the lease sweep of another builder. */
  stop(): Promise<void>;
  /** Guarded rollout's sweep (6). */
  guard: GuardSweep;
}

export async function startBuilder(
  platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'disk' | 'logger' | 'outbound'>,
  opts: StartBuilderOptions = {},
): Promise<Builder> {
  const { db, clock, config } = platform;
  const log = platform.logger.child({ component: 'builder' });
  // The pid in the owner id tells an operator (and the kill -9 test) which process holds a build.
  const owner = `bld_${process.pid}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const leaseMs = opts.leaseMs ?? LIMITS.deploys.leaseMs;
  const buildDir = path.resolve(config.BUILD_DIR ?? path.join(os.tmpdir(), 'service-builds'));
  await mkdir(buildDir, { recursive: true });
  await chmod(buildDir, 0o711);
  const ctx: BuildContext = {
    platform,
    log,
    owner,
    dataDir: path.resolve(config.DATA_DIR),
    buildDir,
    isolation: buildIsolationOf(config, platform.outbound, opts.cgroupHost),
    quota: createOutputQuota(platform),
    checkoutOfGithub: githubCheckout(platform),
    bwrap: opts.bwrap,
  };
  await reportBuildEnvironment(config, log, opts);
  const building: Building = new Map();
  let stopped = false;
  let waking: Promise<void> | undefined;
  let wakeAgain = false;
  /** Deploys this builder was told of and has not taken yet (it was full). */
  const told = new Set<string>();
  /** Whether to take the oldest queued deploy of any age (after a build of its own ended). */
  let takeAny = false;
  const totals: BuildTotals = { ready: 0, canceled: 0, failed: {} };
  const countFailed = (reason: DeployFailureReason) => (totals.failed[reason] = (totals.failed[reason] ?? 0) + 1);
  const count = (o: DeployOutcome): void => {
    if (o.status === 'failed') countFailed(o.reason);
    else totals[o.status]++;
  };

  // 1-2. wake and claim while there is room
  function wake(): Promise<void> {
    if (waking !== undefined) {
      wakeAgain = true;
      return waking;
    }
    waking = (async () => {
      do {
        wakeAgain = false;
        while (!stopped && building.size < config.BUILDS_PER_BUILDER) {
          const now = clock.now();
          let claimed: ClaimedDeploy | undefined;
          for (const id of told) {
            told.delete(id);
            claimed = await buildsRepository.claim(db, owner, now, now + leaseMs, { deployId: id });
            if (claimed) break;
          }
          claimed ??= await buildsRepository.claim(db, owner, now, now + leaseMs, { queuedBefore: takeAny ? now + 1 : now - ORPHAN_AFTER_MS });
          if (!claimed) break;
          start(claimed);
        }
        takeAny = false;
      } while (wakeAgain && !stopped);
    })()
      .catch((err) => log.warn({ err }, 'claiming queued deploys failed; retried at the next poll'))
      .finally(() => (waking = undefined));
    return waking;
  }

  // 3-4. build and finish (build-deploy.ts)
  function start(d: ClaimedDeploy): void {
    const abort = new AbortController();
    const entry = { done: Promise.resolve(), abort, canceled: false };
    const done = buildDeploy(ctx, d, abort.signal, () => entry.canceled)
      .then((recorded) => {
        if (recorded) count(recorded);
      })
      .catch((err) => log.error({ err, deployId: d.id }, 'build crashed'))
      .finally(() => {
        building.delete(d.id);
        takeAny = true;
        if (!stopped) void wake();
      });
    entry.done = done;
    building.set(d.id, entry);
  }

  const stopUpkeep = startUpkeep(ctx, building, leaseMs, async (f) => {
    countFailed('builder_lost');
    log.warn({ deployId: f.id }, 'builder lost: lease expired');
    await announceDeploy(platform, log, f);
  });
  // 6. guard
  const guard = startGuardSweep(platform, log.child({ component: 'guarded-rollout' }), opts.guardSweepMs ?? config.GUARDED_ROLLOUT_SWEEP_MS);
  const pollTimer = setInterval(() => void wake(), POLL_MS);
  pollTimer.unref();

  const sub = await platform.bus.subscribe(deployRequests.TOPIC, CONSUMER_GROUPS.builder, async (messages) => {
    for (const m of messages) {
      const request = deployRequests.decode(m.value);
      if (request) told.add(request.deployId);
      else log.warn({ offset: m.offset }, 'undecodable deploy request skipped');
    }
    // Not awaited: the claim reads Postgres, and a publish (in-process: resolved once handled) never
    // waits for a build.
    void wake();
  });
  void wake();
  log.info({ owner, builds: config.BUILDS_PER_BUILDER }, 'builder started');

  return {
    running: () => [...building.keys()],
    stats: () => structuredClone(totals),
    async idle() {
      for (;;) {
        await waking;
        const inFlight = [...building.values()].map((b) => b.done);
        if (!inFlight.length && !waking) return;
        await Promise.all(inFlight);
      }
    },
    guard,
    async stop() {
      stopped = true;
      stopUpkeep();
      guard.stop();
      clearInterval(pollTimer);
      await sub.stop();
      for (const b of building.values()) b.abort.abort();
      await Promise.all([...building.values()].map((b) => b.done));
    },
  };
}

/** The builds running in this process, by deploy id. */
type Building = Map<string, { done: Promise<void>; abort: AbortController; canceled: boolean }>;

/**
 * 5. upkeep, until the returned stop is called: our leases renewed every third of their length and the expired ones
 * failed as builder_lost (`lost` is told of each); builds asked to cancel killed; old artifacts swept.
 */
function startUpkeep(ctx: BuildContext, building: Building, leaseMs: number, lost: (f: FinishedDeploy) => Promise<void>): () => void {
  const { db, clock, config } = ctx.platform;
  const { log, owner } = ctx;
  const leaseTimer = setInterval(
    () => {
      const now = clock.now();
      void buildsRepository
        .renew(db, owner, [...building.keys()], now + leaseMs)
        .then(() => buildsRepository.failExpired(db, now))
        .then(async (expired) => {
          for (const f of expired) await lost(f);
        })
        .catch((err) => log.warn({ err }, 'lease upkeep failed; retried'));
    },
    Math.max(50, Math.floor(leaseMs / 3)),
  );
  leaseTimer.unref();
  // Canceled builds: their process groups are killed, and they end `canceled`. Checked often (a cheap read of
  // this builder's own running deploys) so a cancel takes effect within about CANCEL_POLL_MS.
  const cancelTimer = setInterval(() => {
    if (!building.size) return;
    void buildsRepository
      .cancelRequested(db, [...building.keys()])
      .then((ids) => {
        for (const id of ids) {
          const b = building.get(id);
          if (b && !b.canceled) {
            b.canceled = true;
            b.abort.abort();
          }
        }
      })
      .catch((err) => log.warn({ err }, 'checking for canceled builds failed; retried'));
  }, CANCEL_POLL_MS);
  cancelTimer.unref();
  // Old artifacts: at start, then every SWEEP_MS.
  const sweep = () =>
    sweepArtifacts(db, ctx.dataDir, config.ARTIFACTS_KEPT)
      .then((ids) => ids.length && log.info({ deleted: ids.length }, 'old deploy artifacts deleted'))
      .catch((err) => log.warn({ err }, 'sweeping old artifacts failed; retried'));
  const sweepTimer = setInterval(() => void sweep(), SWEEP_MS);
  sweepTimer.unref();
  void sweep();
  return () => {
    clearInterval(leaseTimer);
    clearInterval(cancelTimer);
    clearInterval(sweepTimer);
  };
}
