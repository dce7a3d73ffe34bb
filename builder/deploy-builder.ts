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
 *   3. build      checkout, build command, artifact (build-run.ts), every output line to the build log
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
 */
import path from 'node:path';
import os from 'node:os';
import { chmod, mkdir, rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import type { Platform } from '../platform/platform.ts';
import { publishProjectEvent } from '../domain/project-event-publisher.ts';
import { siteUrls } from '../platform/sites/site-urls.ts';
import { CONSUMER_GROUPS } from '../schemas/topics.ts';
import { LIMITS } from '../schemas/limits.ts';
import type { DeployFailureReason } from '../schemas/deploys.ts';
import * as deployRequests from '../schemas/bus/deploy-requests.ts';
import { createBuildLog } from './build-log.ts';
import { githubCheckout } from './github-checkout.ts';
import { runBuild, type BuildIsolation, type BuildOutcome } from './build-run.ts';
import { sweepArtifacts } from './artifact-sweep.ts';
import { ensureSiteMonitor } from '../domain/uptime/site-monitor.ts';
import { probeSandbox } from './sandbox/sandbox.ts';
import { probeBuildCgroups, type CgroupHost } from './sandbox/build-cgroup.ts';
import { buildsRepository, type ClaimedDeploy, type FinishedDeploy } from './builds-repository.ts';
import { isDiskFullError } from '../platform/data-dir/disk-space.ts';
import { createOutputQuota } from './output-quota.ts';
import { keepDeploySourceMaps } from './source-maps/collect-source-maps.ts';
import { sourceMapsRepository } from '../domain/source-maps/source-maps-repository.ts';
import { ROUTES } from '../schemas/api/route-table.ts';

const POLL_MS = 2_000;
/** A queued deploy nobody took for this long is taken by whichever builder polls next. */
const ORPHAN_AFTER_MS = 5_000;
/** How often a builder checks whether one of its running builds was canceled. */
const CANCEL_POLL_MS = 1_000;
/** How often old artifacts are swept (artifact-sweep.ts). */
const SWEEP_MS = 10 * 60 * 1000;
/** The build log's line for a build refused for want of disk (the operator's log says how much is free). */
export const DISK_FULL_BUILD_LINE = 'the build did not run: the service is out of disk space. Nothing was deployed; redeploy once space is freed';

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
}

export async function startBuilder(
  platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'disk' | 'logger' | 'outbound'>,
  opts: StartBuilderOptions = {},
): Promise<Builder> {
  const { db, clock, config } = platform;
  const checkoutOfGithub = githubCheckout(platform);
  const log = platform.logger.child({ component: 'builder' });
  // The pid in the owner id tells an operator (and the kill -9 test) which process holds a build.
  const owner = `bld_${process.pid}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const leaseMs = opts.leaseMs ?? LIMITS.deploys.leaseMs;
  const dataDir = path.resolve(config.DATA_DIR);
  const buildDir = path.resolve(config.BUILD_DIR ?? path.join(os.tmpdir(), 'service-builds'));
  await mkdir(buildDir, { recursive: true });
  await chmod(buildDir, 0o711);
  const quota = createOutputQuota(platform);
  const isolation: BuildIsolation = {
    sandbox: config.BUILD_SANDBOX === 'on',
    network: config.BUILD_NETWORK,
    uid: config.BUILD_UID,
    memoryBytes: config.BUILD_MEMORY_MB * 1024 * 1024,
    pids: config.BUILD_PIDS,
    cpuSeconds: config.BUILD_CPU_SECONDS,
    diskBytes: config.BUILD_DISK_MB * 1024 * 1024,
    tmpBytes: config.BUILD_TMP_MB * 1024 * 1024,
    allowUnlimited: config.BUILD_ALLOW_UNLIMITED,
    cgroupHost: opts.cgroupHost,
    artifact: { maxBytes: config.ARTIFACT_MAX_BYTES, maxFiles: config.ARTIFACT_MAX_FILES, maxFileBytes: config.ARTIFACT_MAX_FILE_BYTES },
    guard: platform.outbound,
  };
  // Said at every start, on stderr as well as in the log, whatever LOG_LEVEL is.
  const cgroups = await probeBuildCgroups(opts.cgroupHost);
  const limits = cgroups.ok ? `cgroup ${cgroups.version} (${cgroups.dir})` : 'none';
  if (!cgroups.ok && config.BUILD_ALLOW_UNLIMITED) {
    log.warn({ why: cgroups.why }, 'BUILD_ALLOW_UNLIMITED=true: builds run without memory or process limits; only for a single-tenant machine');
    process.stderr.write(`WARNING: BUILD_ALLOW_UNLIMITED=true: builds run without memory or process limits (${cgroups.why})\n`);
  } else if (!cgroups.ok) {
    log.error({ why: cgroups.why }, 'build limits cannot be enforced here: every build fails with limits_unavailable');
    process.stderr.write(
      `WARNING: builds' memory and process limits cannot be enforced here, so every deploy fails with limits_unavailable (${cgroups.why}): delegate a cgroup to the service (README, "Builds without limits") or set BUILD_ALLOW_UNLIMITED=true on a single-tenant machine\n`,
    );
  }
  if (config.BUILD_SANDBOX === 'off') {
    log.warn("BUILD_SANDBOX=off: builds run unsandboxed as the service's user; only for a single-tenant machine");
    process.stderr.write("WARNING: BUILD_SANDBOX=off: builds run unsandboxed, as the service's user (single-tenant machines only)\n");
  } else {
    const probe = await probeSandbox(config.BUILD_UID, opts.bwrap);
    if (probe.available && (cgroups.ok || config.BUILD_ALLOW_UNLIMITED))
      log.info(
        { sandbox: probe.version, network: config.BUILD_NETWORK, limits },
        cgroups.ok ? 'builds run sandboxed, with memory and process limits' : 'builds run sandboxed, without memory or process limits',
      );
    else if (probe.available) log.info({ sandbox: probe.version }, 'builds can be sandboxed here (but fail with limits_unavailable, above)');
    else {
      log.error({ why: probe.message }, 'builds cannot be sandboxed here: every build fails with sandbox_unavailable');
      process.stderr.write(`WARNING: builds cannot be sandboxed here, so every deploy fails with sandbox_unavailable: ${probe.message}\n`);
    }
  }
  const building = new Map<string, { done: Promise<void>; abort: AbortController; canceled: boolean }>();
  let stopped = false;
  let waking: Promise<void> | undefined;
  let wakeAgain = false;
  /** Deploys this builder was told of and has not taken yet (it was full). */
  const told = new Set<string>();
  /** Whether to take the oldest queued deploy of any age (after a build of its own ended). */
  let takeAny = false;
  const totals: BuildTotals = { ready: 0, canceled: 0, failed: {} };
  const countFailed = (reason: DeployFailureReason) => (totals.failed[reason] = (totals.failed[reason] ?? 0) + 1);

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

  // 3-4. build and finish
  function start(d: ClaimedDeploy): void {
    const abort = new AbortController();
    const entry = { done: Promise.resolve(), abort, canceled: false };
    const done = build(d, abort.signal, () => entry.canceled)
      .catch((err) => log.error({ err, deployId: d.id }, 'build crashed'))
      .finally(() => {
        building.delete(d.id);
        takeAny = true;
        if (!stopped) void wake();
      });
    entry.done = done;
    building.set(d.id, entry);
  }

  async function build(d: ClaimedDeploy, signal: AbortSignal, canceled: () => boolean): Promise<void> {
    const source = await buildsRepository.source(db, d.projectId);
    // A repository connected through the GitHub App clones with a short-lived installation token (github-checkout.ts).
    const github = source ? await checkoutOfGithub(d.projectId, source.repoUrl) : undefined;
    const cloneToken = github && 'token' in github ? github : undefined;
    const buildLog = createBuildLog({
      analytics: platform.analytics,
      projectId: d.projectId,
      deployId: d.id,
      secrets: [...(source?.env ?? []).filter((e) => e.secret).map((e) => e.value), ...(cloneToken ? [cloneToken.token, cloneToken.auth.header] : [])],
      now: () => clock.now(),
      maxLines: LIMITS.deploys.logLinesPerDeploy,
      maxLineChars: LIMITS.deploys.logLineChars,
    });
    let outcome: { status: 'ready'; artifactDir: string } | { status: 'failed'; reason: DeployFailureReason; exitCode?: number } | { status: 'canceled' };
    const refused = source && (github && 'refused' in github ? github.refused : await repositoryRefusal(cloneToken?.repoUrl ?? source.repoUrl));
    const sandbox = config.BUILD_SANDBOX === 'on' ? await probeSandbox(config.BUILD_UID, opts.bwrap) : undefined;
    if (platform.disk.low || (await quota.belowFloor())) {
      log.warn({ deployId: d.id }, "DATA_DIR's disk is low on space: the build is not started, the deploy fails as disk_full");
      buildLog.line('system', DISK_FULL_BUILD_LINE);
      outcome = { status: 'failed', reason: 'disk_full' };
    } else if (sandbox && !sandbox.available) {
      buildLog.line('system', `builds cannot be sandboxed on this builder: ${sandbox.message}`);
      outcome = { status: 'failed', reason: 'sandbox_unavailable' };
    } else if (!source) {
      buildLog.line('system', `the project has no build source: set one with PATCH ${ROUTES.updateDeploySettings.path}`);
      outcome = { status: 'failed', reason: 'source_missing' };
    } else if (refused) {
      buildLog.line('system', `repository refused: ${refused}`);
      outcome = { status: 'failed', reason: 'checkout_failed' };
    } else {
      const artifactDir = path.join(dataDir, 'artifacts', d.id);
      const result = await runBuild({
        deployId: d.id,
        branch: d.branch,
        environment: d.environment,
        repoUrl: cloneToken?.repoUrl ?? source.repoUrl,
        cloneAuth: cloneToken?.auth,
        buildCommand: source.buildCommand,
        outputDir: source.outputDir,
        env: Object.fromEntries(source.env.map((e) => [e.name, e.value])),
        workDir: path.join(buildDir, d.id),
        artifactDir,
        isolation,
        timeoutMs: config.BUILD_TIMEOUT_MS,
        log: buildLog,
        onSha: (sha) => buildsRepository.recordSha(db, d.id, sha),
        signal,
        room: () => quota.room({ projectId: d.projectId, deployId: d.id }),
      })
        .then((r) => quota.charge({ projectId: d.projectId, deployId: d.id, artifactDir, note: (t) => buildLog.line('system', t) }, r))
        .catch(async (err: unknown): Promise<BuildOutcome> => {
          // The artifact (or anything else of the build's) ran out of space: what was copied goes, the deploy fails.
          if (!platform.disk.noteError(err) && !isDiskFullError(err)) throw err;
          await rm(artifactDir, { recursive: true, force: true }).catch(() => undefined);
          buildLog.line('system', DISK_FULL_BUILD_LINE);
          return { ok: false, reason: 'disk_full' };
        });
      outcome = result.ok
        ? { status: 'ready', artifactDir: path.relative(dataDir, artifactDir) }
        : { status: 'failed', reason: result.reason, exitCode: result.exitCode };
    }
    if (canceled()) {
      buildLog.line('system', 'canceled');
      outcome = { status: 'canceled' };
    }
    // The output's source maps, kept privately for symbolication before the deploy turns ready (source-maps/).
    if (outcome.status === 'ready' && !signal.aborted)
      await keepDeploySourceMaps(db, { projectId: d.projectId, deployId: d.id }, path.join(dataDir, outcome.artifactDir), (t) => buildLog.line('system', t));
    await buildLog.close().catch((err) => log.warn({ err, deployId: d.id }, 'writing the build log failed'));
    if (signal.aborted && !canceled()) return; // stopping: the lease runs out and another builder fails it as builder_lost
    const finished = await buildsRepository.finish(db, owner, d.id, outcome, clock.now(), buildLog.stored);
    if (finished) {
      if (outcome.status === 'failed') countFailed(outcome.reason);
      else totals[outcome.status]++;
    }
    // A canceled deploy neither succeeded nor failed: no deploy.* event.
    if (finished && outcome.status !== 'canceled') await announce(finished);
    // An output no deploy serves (canceled, or its lease lost meanwhile) is not left on disk uncharged.
    if (!finished || outcome.status !== 'ready') await rm(path.join(dataDir, 'artifacts', d.id), { recursive: true, force: true }).catch(() => undefined);
    if (!finished) {
      log.warn({ deployId: d.id }, 'build finished after its lease was taken (builder_lost); result dropped');
      await sourceMapsRepository.deleteForDeploys(db, [d.id]).catch(() => undefined);
    } else if (outcome.status === 'ready' && finished.environment === 'production')
      await ensureSiteMonitor(platform, finished.projectId)
        .then((r) => r === 'created' && log.info({ projectId: finished.projectId }, 'the live site got an uptime monitor'))
        .catch((err) => log.warn({ err, deployId: d.id }, 'giving the live site a monitor failed'));
  }

  /**
   * The repository checked again right before the clone: an https host must still resolve to public addresses
   * only (the outbound URL guard), as when the settings were saved, and a local one still needs ALLOW_LOCAL_REPOS.
   * git resolves the name itself afterwards, so a sandboxed builder's own egress rules remain the real fence.
   */
  async function repositoryRefusal(repoUrl: string): Promise<string | undefined> {
    if (repoUrl.startsWith('/') || repoUrl.startsWith('file://'))
      return config.ALLOW_LOCAL_REPOS ? undefined : 'local repositories need ALLOW_LOCAL_REPOS=true';
    try {
      await platform.outbound.checkUrl(repoUrl, 'repository');
      return undefined;
    } catch (err) {
      return (err as Error).message;
    }
  }

  async function announce(f: FinishedDeploy): Promise<void> {
    const succeeded = f.failureReason === null;
    const data = {
      deployId: f.id,
      branch: f.branch,
      gitSha: f.gitSha,
      environment: f.environment,
      url: succeeded ? siteUrls(config).deploy(f.id) : null,
      durationMs: f.startedAt === null ? null : f.finishedAt - f.startedAt,
      reason: f.failureReason,
    };
    await publishProjectEvent(platform, {
      id: `${succeeded ? 'deploy.succeeded' : 'deploy.failed'}:${f.id}`,
      projectId: f.projectId,
      event: succeeded ? 'deploy.succeeded' : 'deploy.failed',
      data,
    }).catch((err) => log.error({ err, deployId: f.id }, 'publishing the deploy event failed'));
  }

  // 5. leases: renew ours, fail the expired
  const leaseTimer = setInterval(
    () => {
      const now = clock.now();
      void buildsRepository
        .renew(db, owner, [...building.keys()], now + leaseMs)
        .then(() => buildsRepository.failExpired(db, now))
        .then(async (lost) => {
          for (const f of lost) {
            countFailed('builder_lost');
            log.warn({ deployId: f.id }, 'builder lost: lease expired');
            await announce(f);
          }
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
  const pollTimer = setInterval(() => void wake(), POLL_MS);
  pollTimer.unref();
  // Old artifacts: at start, then every SWEEP_MS.
  const sweep = () =>
    sweepArtifacts(db, dataDir, config.ARTIFACTS_KEPT)
      .then((ids) => ids.length && log.info({ deleted: ids.length }, 'old deploy artifacts deleted'))
      .catch((err) => log.warn({ err }, 'sweeping old artifacts failed; retried'));
  const sweepTimer = setInterval(() => void sweep(), SWEEP_MS);
  sweepTimer.unref();
  void sweep();

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
    async stop() {
      stopped = true;
      clearInterval(leaseTimer);
      clearInterval(cancelTimer);
      clearInterval(pollTimer);
      clearInterval(sweepTimer);
      await sub.stop();
      for (const b of building.values()) b.abort.abort();
      await Promise.all([...building.values()].map((b) => b.done));
    },
  };
}
