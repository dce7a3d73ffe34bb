import path from 'node:path';
import { rm } from 'node:fs/promises';
import type { Logger } from '../platform/logger.ts';
import type { Platform } from '../platform/platform.ts';
import { publishProjectEvent } from '../domain/project-event-publisher.ts';
import { siteUrls } from '../platform/sites/site-urls.ts';
import { LIMITS } from '../schemas/limits.ts';
import type { DeployFailureReason } from '../schemas/deploys.ts';
import { ROUTES } from '../schemas/api/route-table.ts';
import { isDiskFullError } from '../platform/data-dir/disk-space.ts';
import { ensureSiteMonitor } from '../domain/uptime/site-monitor.ts';
import { resolveOnDeploy } from '../domain/issue-events/resolve-on-deploy.ts';
import { publicBaseUrl } from '../platform/config.ts';
import { deployCommitsRepository } from '../domain/deploys/deploy-commits-repository.ts';
import { sourceMapsRepository } from '../domain/source-maps/source-maps-repository.ts';
import { createBuildLog, type BuildLog } from './build-log.ts';
import type { GithubCheckout } from './github-checkout.ts';
import { runBuild, type BuildIsolation, type BuildOutcome } from './build-run.ts';
import { probeSandbox } from './sandbox/sandbox.ts';
import { buildsRepository, type BuildSource, type ClaimedDeploy, type FinishedDeploy } from './builds-repository.ts';
import type { OutputQuota } from './output-quota.ts';
import { keepDeploySourceMaps } from './source-maps/collect-source-maps.ts';
import { compileSite } from '../hosting/build/compile-site.ts';
import { compressedBound } from '../hosting/compress/precompress.ts';
import { buildVariables } from './build-variables.ts';
import { buildVariablesRepository } from './build-variables-repository.ts';
import { buildCacheOf } from './build-cache/build-cache-job.ts';

/**
 * Steps 3 and 4 of the builder (deploy-builder.ts) for one claimed deploy:
 *   open     its build source, the GitHub App's clone token where the repository is connected through it, the build log
 *   build    or refuse to: a low disk, no sandbox, no source, a refused repository each fail the deploy with a log line;
 *            otherwise checkout (and the commits since the previous production deploy), build command and artifact
 *            (build-run.ts), charged to its project (output-quota.ts)
 *   finish   source maps kept, the log written, the outcome recorded (only while the lease is still ours), the
 *            deploy.* event, the output removed when no deploy serves it, the live site given its uptime monitor
 */

/** The result a build records on its deploy. */
export type DeployOutcome =
  | { status: 'ready'; artifactDir: string }
  | { status: 'failed'; reason: DeployFailureReason; exitCode?: number }
  | { status: 'canceled' };

/** The text the build log shows for a build refused for want of disk (the operator's log says how much is free). */
export const DISK_FULL_BUILD_LINE = 'the build did not run: the service is out of disk space. Nothing was deployed; redeploy once space is freed';

/** What one build needs of its builder. */
export interface BuildContext {
  platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'disk' | 'outbound'>;
  log: Logger;
  /** The lease owner this builder claims under. */
  owner: string;
  /** DATA_DIR, absolute: artifacts live under its `artifacts/`. */
  dataDir: string;
  /** Where checkouts are made (one directory per deploy, removed after). */
  buildDir: string;
  isolation: BuildIsolation;
  quota: OutputQuota;
  checkoutOfGithub(projectId: string, repoUrl: string): Promise<GithubCheckout>;
  /** The bubblewrap binary probed before each build (tests name a missing one). */
  bwrap?: string;
}

interface OpenedBuild {
  source: BuildSource | undefined;
  /** The clone URL and token of a repository connected through the GitHub App. */
  cloneToken: Extract<GithubCheckout, { token: string }> | undefined;
  /** Why the GitHub App cannot clone it (no App configured, the installation gone). */
  githubRefusal: string | undefined;
  buildLog: BuildLog;
  /** The build's variables: the project's for its environment and branch, and the system ones (build-variables.ts). */
  env: Record<string, string>;
}

/**
 * Build a claimed deploy and record how it ended. Resolves with the outcome recorded, or undefined when none was:
 * the builder is stopping (the lease runs out and another builder fails it as builder_lost), or the lease was lost.
 */
export async function buildDeploy(ctx: BuildContext, d: ClaimedDeploy, signal: AbortSignal, canceled: () => boolean): Promise<DeployOutcome | undefined> {
  const opened = await openBuild(ctx, d);
  let outcome = await buildOutcome(ctx, d, opened, signal);
  if (canceled()) {
    opened.buildLog.line('system', 'canceled');
    outcome = { status: 'canceled' };
  }
  return finishBuild(ctx, d, outcome, opened.buildLog, signal, canceled);
}

async function openBuild(ctx: BuildContext, d: ClaimedDeploy): Promise<OpenedBuild> {
  const { platform } = ctx;
  const source = await buildsRepository.source(platform.db, d.projectId);
  // A repository connected through the GitHub App clones with a short-lived installation token (github-checkout.ts).
  const github = source ? await ctx.checkoutOfGithub(d.projectId, source.repoUrl) : undefined;
  const cloneToken = github && 'token' in github ? github : undefined;
  const variables = source ? await buildVariables(platform, d) : { env: {}, secrets: [] };
  const buildLog = createBuildLog({
    analytics: platform.analytics,
    projectId: d.projectId,
    deployId: d.id,
    secrets: [...variables.secrets, ...(cloneToken ? [cloneToken.token, cloneToken.auth.header] : [])],
    now: () => platform.clock.now(),
    maxLines: LIMITS.deploys.logLinesPerDeploy,
    maxLineChars: LIMITS.deploys.logLineChars,
  });
  return { source, cloneToken, githubRefusal: github && 'refused' in github ? github.refused : undefined, buildLog, env: variables.env };
}

async function buildOutcome(ctx: BuildContext, d: ClaimedDeploy, opened: OpenedBuild, signal: AbortSignal): Promise<DeployOutcome> {
  const { platform, dataDir } = ctx;
  const { config } = platform;
  const { source, cloneToken, buildLog } = opened;
  const refused = source && (opened.githubRefusal ?? (await repositoryRefusal(platform, cloneToken?.repoUrl ?? source.repoUrl)));
  const sandbox = config.BUILD_SANDBOX === 'on' ? await probeSandbox(config.BUILD_UID, ctx.bwrap) : undefined;
  if (platform.disk.low || (await ctx.quota.belowFloor())) {
    ctx.log.warn({ deployId: d.id }, "DATA_DIR's disk is low on space: the build is not started, the deploy fails as disk_full");
    buildLog.line('system', DISK_FULL_BUILD_LINE);
    return { status: 'failed', reason: 'disk_full' };
  }
  if (sandbox && !sandbox.available) {
    buildLog.line('system', `builds cannot be sandboxed on this builder: ${sandbox.message}`);
    return { status: 'failed', reason: 'sandbox_unavailable' };
  }
  if (!source) {
    buildLog.line('system', `the project has no build source: set one with PATCH ${ROUTES.updateDeploySettings.path}`);
    return { status: 'failed', reason: 'source_missing' };
  }
  if (refused) {
    buildLog.line('system', `repository refused: ${refused}`);
    return { status: 'failed', reason: 'checkout_failed' };
  }
  const artifactDir = path.join(dataDir, 'artifacts', d.id);
  const result = await runBuild({
    deployId: d.id,
    branch: d.branch,
    environment: d.environment,
    repoUrl: cloneToken?.repoUrl ?? source.repoUrl,
    cloneAuth: cloneToken?.auth,
    buildCommand: source.buildCommand,
    outputDir: source.outputDir,
    env: opened.env,
    onFramework: (framework) => buildVariablesRepository.recordFramework(platform.db, d.id, framework),
    workDir: path.join(ctx.buildDir, d.id),
    artifactDir,
    isolation: ctx.isolation,
    timeoutMs: config.BUILD_TIMEOUT_MS,
    log: buildLog,
    onSha: (sha) => buildsRepository.recordSha(platform.db, d.id, sha),
    // Suspect commits (issue 41): the commits since the previous production deploy, kept with the deploy.
    commitsSince: await deployCommitsRepository.previousProductionSha(platform.db, d.projectId, d.id),
    onCommits: (commits) => deployCommitsRepository.save(platform.db, d.id, commits),
    signal,
    room: () => ctx.quota.room({ projectId: d.projectId, deployId: d.id }),
    // The project's and branch's build cache (build-cache/): node_modules and the package managers' caches.
    cache: await buildCacheOf(platform, d, dataDir, () => ctx.quota.belowFloor()),
  })
    .then((r) => ctx.quota.charge({ projectId: d.projectId, deployId: d.id, artifactDir, note: (t) => buildLog.line('system', t) }, r))
    .catch(async (err: unknown): Promise<BuildOutcome> => {
      // The artifact (or anything else of the build's) ran out of space: what was copied goes, the deploy fails.
      if (!platform.disk.noteError(err) && !isDiskFullError(err)) throw err;
      await rm(artifactDir, { recursive: true, force: true }).catch(() => undefined);
      buildLog.line('system', DISK_FULL_BUILD_LINE);
      return { ok: false, reason: 'disk_full' };
    });
  return result.ok
    ? { status: 'ready', artifactDir: path.relative(dataDir, artifactDir) }
    : { status: 'failed', reason: result.reason, exitCode: result.exitCode };
}

/** What finishing a deploy needs: a builder's, or the API's for a prebuilt upload (prebuilt-deploy.ts), whose lease it holds. */
export type FinishContext = Pick<BuildContext, 'platform' | 'log' | 'owner' | 'dataDir' | 'quota'>;

/** Step `finish` for a deploy this owner holds: shared by builds and prebuilt uploads, which run no build. */
export async function finishBuild(
  ctx: FinishContext,
  d: ClaimedDeploy,
  outcome: DeployOutcome,
  buildLog: BuildLog,
  signal: AbortSignal,
  canceled: () => boolean,
): Promise<DeployOutcome | undefined> {
  const { platform, dataDir, log } = ctx;
  const { db } = platform;
  // The output's source maps, kept privately for symbolication before the deploy turns ready (source-maps/).
  if (outcome.status === 'ready' && !signal.aborted)
    await keepDeploySourceMaps(db, { projectId: d.projectId, deployId: d.id }, path.join(dataDir, outcome.artifactDir), (t) => buildLog.line('system', t));
  // The output prepared for serving (issue 42): `_redirects`/`_headers` compiled, ETags, text precompressed.
  // The spa setting is read as the build ends, so a change made while it ran applies to it.
  if (outcome.status === 'ready' && !signal.aborted) {
    const spa = (await buildsRepository.source(db, d.projectId))?.spa === true;
    // What it writes beside the output is charged to it too: compressed copies only as far as the quotas leave room.
    const own = { projectId: d.projectId, deployId: d.id };
    const reserve = await ctx.quota.reserveServing(own, compressedBound);
    let written = 0;
    await compileSite(path.join(dataDir, outcome.artifactDir), {
      spa,
      roomBytes: reserve.extra,
      written: (bytes) => (written = bytes),
      note: (t) => buildLog.line('system', t),
    });
    await ctx.quota.settleServing(own, reserve, written);
  }
  await buildLog.close().catch((err) => log.warn({ err, deployId: d.id }, 'writing the build log failed'));
  if (signal.aborted && !canceled()) return undefined; // stopping: the lease runs out and another builder fails it as builder_lost
  const finished = await buildsRepository.finish(db, ctx.owner, d.id, outcome, platform.clock.now(), buildLog.stored);
  // A canceled deploy neither succeeded nor failed: no deploy.* event.
  if (finished && outcome.status !== 'canceled') await announceDeploy(platform, log, finished);
  // An output no deploy serves (canceled, or its lease lost meanwhile) is not left on disk uncharged.
  if (!finished || outcome.status !== 'ready') await rm(path.join(dataDir, 'artifacts', d.id), { recursive: true, force: true }).catch(() => undefined);
  if (!finished) {
    log.warn({ deployId: d.id }, 'build finished after its lease was taken (builder_lost); result dropped');
    await sourceMapsRepository.deleteForDeploys(db, [d.id]).catch(() => undefined);
    return undefined;
  }
  // Live now: the issues resolved in next deploy before it was created are resolved by it (issue 41).
  if (outcome.status === 'ready' && finished.environment === 'production')
    await resolveOnDeploy(platform, publicBaseUrl(platform.config), finished.projectId, finished.id).catch((err) =>
      log.error({ err, deployId: d.id }, 'resolving the issues marked before this deploy failed'),
    );
  if (outcome.status === 'ready' && finished.environment === 'production')
    await ensureSiteMonitor(platform, finished.projectId)
      .then((r) => r === 'created' && log.info({ projectId: finished.projectId }, 'the live site got an uptime monitor'))
      .catch((err) => log.warn({ err, deployId: d.id }, 'giving the live site a monitor failed'));
  return outcome;
}

/**
 * The repository checked again right before the clone: an https host must still resolve to public addresses
 * only (the outbound URL guard), as when the settings were saved, and a local one still needs ALLOW_LOCAL_REPOS.
 * git resolves the name itself afterwards, so a sandboxed builder's own egress rules remain the real fence.
 */
async function repositoryRefusal(platform: Pick<Platform, 'config' | 'outbound'>, repoUrl: string): Promise<string | undefined> {
  if (repoUrl.startsWith('/') || repoUrl.startsWith('file://'))
    return platform.config.ALLOW_LOCAL_REPOS ? undefined : 'local repositories need ALLOW_LOCAL_REPOS=true';
  try {
    await platform.outbound.checkUrl(repoUrl, 'repository');
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** deploy.succeeded / deploy.failed through publishProjectEvent, so webhooks receive them; a failure to publish is logged. */
export async function announceDeploy(platform: Pick<Platform, 'bus' | 'clock' | 'config'>, log: Logger, f: FinishedDeploy): Promise<void> {
  const succeeded = f.failureReason === null;
  const data = {
    deployId: f.id,
    branch: f.branch,
    gitSha: f.gitSha,
    environment: f.environment,
    url: succeeded ? siteUrls(platform.config).deploy(f.id) : null,
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
