import { createHash } from 'node:crypto';
import { publicBaseUrl } from '../../platform/config.ts';
import { type GithubApp, type RepositoryWriter, githubAppFromConfig } from '../../platform/github-app.ts';
import type { Logger } from '../../platform/logger.ts';
import type { Platform } from '../../platform/platform.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import { commentMarker, githubSettingsOf } from '../../schemas/github-status.ts';
import { type DueLink, type Told, githubStatusRepository } from './repositories/github-status-repository.ts';
import { COMMENT_ISSUES, type DeployView, commentBody, desiredStatus } from './steps/github-report.ts';

/**
 * GitHub commit statuses and pull-request comments (issue 41): the processor's sweep over github_deploy_links (migration
 * 0041), the outbox the inbound pipeline fills when a push or a pull request of a bound repository queues a deploy.
 * Every SWEEP_MS, for each link due (leased, so processors sweeping at once never tell GitHub twice):
 *   1. look      the deploy as it is now, its preview URL and console page, the issues first seen in it and never in
 *                production, its sessions
 *   2. decide    the commit status (steps/github-report.ts): pending while building, success with the preview URL when
 *                ready, failure with the console page when failed; a ready preview of a project with
 *                github.failOnNewErrors fails once it brought new issues; and the comment's body
 *   3. tell      GitHub, through an installation token for that one repository (statuses: write, pull_requests: write),
 *                only what changed: the status when its state or text did; the pull request looked up once for a push
 *                of a preview; the comment found by its marker or created, then PATCHed when its body changed (the
 *                newest deploy of a pull request keeps the comment; older ones leave it alone)
 *   4. next      while building: again at the next sweep; once finished: every WATCH_EVERY_MS for WATCH_MS (new issues,
 *                sessions), then never; a failure to reach GitHub: again after a backoff, given up after MAX_ATTEMPTS
 * GitHub failing or hanging never touches the deploy: each call is bounded in time (CALL_TIMEOUT_MS), a failure is
 * logged and counted by reason, and the link is tried again later.
 */
export const SWEEP_MS = 5_000;
/** How long after a deploy finished its status and comment are re-evaluated (new issues, sessions). */
export const WATCH_MS = 30 * 60_000;
const WATCH_EVERY_MS = 60_000;
const LEASE_MS = 2 * 60_000;
const BATCH = 50;
const MAX_ATTEMPTS = 8;
const CALL_TIMEOUT_MS = 10_000;

export type GithubStatusOutcome =
  | 'status_set'
  | 'comment_created'
  | 'comment_updated'
  | 'pull_request_found'
  | 'unchanged'
  | 'no_github_app'
  | 'github_failed'
  | 'gave_up';

export interface GithubStatusSweep {
  /** One sweep now (tests); resolves once every link taken was handled. */
  sweep(): Promise<void>;
  /** Totals since start, by outcome (logs, tests). */
  stats(): Partial<Record<GithubStatusOutcome, number>>;
  stop(): Promise<void>;
}

type SweepPlatform = Pick<Platform, 'analytics' | 'clock' | 'config' | 'db' | 'logger' | 'outbound'>;

export function startGithubStatusSweep(platform: SweepPlatform, opts: { intervalMs?: number; timeoutMs?: number; app?: GithubApp } = {}): GithubStatusSweep {
  const log = platform.logger.child({ component: 'github-status' });
  const app = opts.app ?? githubAppFromConfig(platform.config, platform.outbound, { timeoutMs: opts.timeoutMs ?? CALL_TIMEOUT_MS });
  const totals: Partial<Record<GithubStatusOutcome, number>> = {};
  const count = (o: GithubStatusOutcome) => (totals[o] = (totals[o] ?? 0) + 1);
  let running: Promise<void> | undefined;
  const sweep = () => {
    running ??= sweepOnce(platform, log, app, count).finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => void sweep().catch((err) => log.warn({ err }, 'github status sweep failed; retried')), opts.intervalMs ?? SWEEP_MS);
  timer.unref();
  return {
    sweep,
    stats: () => ({ ...totals }),
    async stop() {
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
}

async function sweepOnce(platform: SweepPlatform, log: Logger, app: GithubApp | undefined, count: (o: GithubStatusOutcome) => void): Promise<void> {
  const now = platform.clock.now();
  const due = await githubStatusRepository.takeDue(platform.db, now, now + LEASE_MS, BATCH);
  await Promise.all(
    due.map(async (link) => {
      let told: Told;
      try {
        told = await report(platform, app, link, now, count);
      } catch (err) {
        const attempts = link.attempts + 1;
        const gaveUp = attempts >= MAX_ATTEMPTS;
        count(gaveUp ? 'gave_up' : 'github_failed');
        log.warn(
          { err, deployId: link.deployId, attempts },
          gaveUp ? 'telling GitHub about a deploy failed; given up' : 'telling GitHub about a deploy failed; retried',
        );
        told = {
          attempts,
          lastError: String((err as Error).message).slice(0, 500),
          nextAttemptAt: gaveUp ? null : now + Math.min(10 * 60_000, 15_000 * 2 ** (attempts - 1)),
        };
      }
      await githubStatusRepository
        .record(platform.db, link.deployId, told)
        .catch((err) => log.warn({ err, deployId: link.deployId }, 'recording a GitHub status failed'));
    }),
  );
}

async function report(platform: SweepPlatform, app: GithubApp | undefined, link: DueLink, now: number, count: (o: GithubStatusOutcome) => void): Promise<Told> {
  const finished = link.status === 'ready' || link.status === 'failed' || link.status === 'canceled';
  // 4. next (decided first: whatever GitHub answers below, the link is looked at again then)
  const watchEnds = (link.finishedAt ?? now) + WATCH_MS;
  const nextAttemptAt = !finished ? now + SWEEP_MS : now < watchEnds ? Math.min(watchEnds, now + WATCH_EVERY_MS) : null;
  if (!app) {
    count('no_github_app');
    return { attempts: 0, lastError: 'no GitHub App is configured (GITHUB_APP_*)', nextAttemptAt: null };
  }

  // 1. look
  const base = publicBaseUrl(platform.config).replace(/\/+$/, '');
  const project = `${base}/projects/${encodeURIComponent(link.slug)}`;
  const view: DeployView = {
    projectId: link.projectId,
    slug: link.slug,
    deployId: link.deployId,
    headSha: link.headSha,
    status: link.status,
    environment: link.environment,
    failureReason: link.failureReason,
    deployUrl: siteUrls(platform.config).deploy(link.deployId),
    consoleUrl: `${project}/deploys/${link.deployId}`,
    issueUrl: (id) => `${project}/errors/${encodeURIComponent(id)}`,
    previewIssues:
      link.status === 'ready'
        ? await githubStatusRepository.previewIssues(platform.db, link.projectId, link.deployId, COMMENT_ISSUES)
        : { total: 0, issues: [] },
    sessions:
      link.status === 'ready' ? await githubStatusRepository.sessions(platform.analytics, link.projectId, link.deployId, now) : { started: 0, crashed: 0 },
    failOnNewErrors: githubSettingsOf(link.settings).failOnNewErrors,
  };

  // 2. decide
  const status = desiredStatus(view);
  const statusChanged = status !== undefined && (status.state !== link.reportedState || status.description !== link.reportedDescription);
  const lookUpPr = link.prNumber === null && !link.prLookedUp && link.environment === 'preview' && finished;
  const body = commentBody(view);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 32);
  const commentWanted = !link.superseded && (link.prNumber !== null || lookUpPr);
  if (!statusChanged && !lookUpPr && !(commentWanted && hash !== link.commentHash)) {
    count('unchanged');
    return { attempts: 0, lastError: null, nextAttemptAt };
  }

  // 3. tell
  const gh = await app.repositoryWriter(link.installationId, link.repoId);
  const told: Told = { attempts: 0, lastError: null, nextAttemptAt };
  if (status && statusChanged) {
    told.statusId = await gh.setStatus(link.headSha, { ...status, context: `cx/deploy/${link.slug}` });
    told.reportedState = status.state;
    told.reportedDescription = status.description;
    count('status_set');
  }
  let pr = link.prNumber;
  if (lookUpPr) {
    pr = (await gh.pullsOf(link.headSha))[0] ?? null;
    told.prLookedUp = true;
    told.prNumber = pr;
    if (pr !== null) count('pull_request_found');
  }
  if (pr !== null && !link.superseded && hash !== link.commentHash) {
    told.commentId = await upsertComment(gh, link, pr, body, count);
    told.commentHash = hash;
  }
  return told;
}

/** The comment this link posted, the one a restart finds by its marker, or a new one. */
async function upsertComment(gh: RepositoryWriter, link: DueLink, pr: number, body: string, count: (o: GithubStatusOutcome) => void): Promise<number> {
  const known = link.commentId ?? (await gh.findComment(pr, commentMarker(link.projectId)));
  if (known !== undefined && (await gh.updateComment(known, body))) {
    count('comment_updated');
    return known;
  }
  count('comment_created');
  return gh.createComment(pr, body);
}
