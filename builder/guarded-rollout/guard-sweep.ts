/**
 * Guarded rollout (issue 41), the builder's sweep: every GUARDED_ROLLOUT_SWEEP_MS (15 s) over the production deploys that
 * went live less than their project's window ago (guardedRollout.windowMinutes, 10 by default) and are not judged yet.
 *   1. look      the ready production deploys still watched (or never looked at); one no longer live before its window
 *                ended (a newer deploy, a manual rollback) is `superseded`: not judged. A project with the setting off
 *                is left alone
 *   2. count     its numbers since it went live (guard-repository.ts), and the previous live deploy's over the same
 *                span from its own going live (cut where the next deploy after it went live)
 *   3. judge     guard-verdict.ts: degraded as soon as a threshold is passed, healthy at the window's end, else watching
 *   4. act       degraded: the verdict recorded (once: any number of builders may sweep), then, when the project opted in
 *                to autoRollback, the previous deploy made live again by the rollback route's rule (domain/deploys/
 *                live-deploy-repository.ts) only while this one still is live; deploy.degraded published (id
 *                `deploy.degraded:<deployId>`, so a retried publish sends once); the reason appended to its build log
 *   0. finish    (first in each sweep) a degraded verdict whose follow-through (step 4 after the record) its builder did
 *                not finish within a minute, because it failed or died midway, is taken over and finished
 * A failure in one deploy is logged and retried at the next sweep (step 4's, a minute on); the others go on.
 */
import type { Logger } from '../../platform/logger.ts';
import type { Platform } from '../../platform/platform.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { liveDeployRepository } from '../../domain/deploys/live-deploy-repository.ts';
import { GUARD_WINDOW_MINUTES, guardedRolloutOf, type DeployDegradedData, type GuardEvidence } from '../../schemas/guarded-rollout.ts';
import { guardRepository, type WatchedDeploy } from './guard-repository.ts';
import { judge } from './guard-verdict.ts';

type GuardPlatform = Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db'>;

/** How each deploy looked at by a sweep ended (GET /metrics-style totals for tests and logs). */
export type GuardOutcome = 'watching' | 'healthy' | 'degraded' | 'rolled_back' | 'superseded' | 'disabled' | 'missed' | 'taken';

/** Why a degraded deploy was not rolled back. */
export type RollbackRefusal = 'not_opted_in' | 'no_previous_deploy' | 'no_longer_live';

/** Verdicts this process took since start (GET /metrics `service_guarded_rollout_total`): degraded ones by why not rolled back. */
export interface GuardTotals {
  healthy: number;
  rolled_back: number;
  superseded: number;
  degraded: Partial<Record<RollbackRefusal, number>>;
}

export interface GuardSweep {
  /** One sweep now (tests with a manual clock); resolves with each deploy's outcome. */
  sweep(): Promise<Map<string, GuardOutcome>>;
  stats(): GuardTotals;
  stop(): void;
}

export function startGuardSweep(platform: GuardPlatform, log: Logger, intervalMs: number): GuardSweep {
  const totals: GuardTotals = { healthy: 0, rolled_back: 0, superseded: 0, degraded: {} };
  let running: Promise<Map<string, GuardOutcome>> | undefined;
  const sweep = () => {
    running ??= sweepOnce(platform, log, totals).finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => void sweep().catch((err) => log.warn({ err }, 'guarded rollout sweep failed; retried')), intervalMs);
  timer.unref();
  return { sweep, stats: () => structuredClone(totals), stop: () => clearInterval(timer) };
}

export async function sweepOnce(platform: GuardPlatform, log: Logger, totals?: GuardTotals): Promise<Map<string, GuardOutcome>> {
  const now = platform.clock.now();
  const out = new Map<string, GuardOutcome>();
  // 0. finish: degraded verdicts whose follow-through another sweep left unfinished (it failed or died midway)
  for (const u of await guardRepository.takeOverUnfinished(platform.db, now)) {
    try {
      const setting = guardedRolloutOf(u.setting);
      const done = await followThrough(platform, log, u, u.evidence, u.evidence.previous.deployId ?? undefined, setting.autoRollback, now, true);
      out.set(u.id, done.outcome);
      count(totals, done);
    } catch (err) {
      log.warn({ err, deployId: u.id }, 'finishing a degraded verdict failed; retried in a minute');
    }
  }
  // 1. look
  for (const d of await guardRepository.watched(platform.db, now, GUARD_WINDOW_MINUTES.max * 60_000)) {
    try {
      const judged = await guard(platform, log, d, now);
      out.set(d.id, judged.outcome);
      count(totals, judged);
    } catch (err) {
      log.warn({ err, deployId: d.id }, 'guarding a deploy failed; retried at the next sweep');
    }
  }
  return out;
}

function count(totals: GuardTotals | undefined, judged: { outcome: GuardOutcome; refused?: RollbackRefusal }): void {
  if (totals && judged.refused) totals.degraded[judged.refused] = (totals.degraded[judged.refused] ?? 0) + 1;
  else if (totals && (judged.outcome === 'healthy' || judged.outcome === 'rolled_back' || judged.outcome === 'superseded')) totals[judged.outcome]++;
}

async function guard(platform: GuardPlatform, log: Logger, d: WatchedDeploy, now: number): Promise<{ outcome: GuardOutcome; refused?: RollbackRefusal }> {
  const { db, analytics } = platform;
  const setting = guardedRolloutOf(d.setting);
  const windowMs = setting.windowMinutes * 60_000;
  if (!setting.enabled) return { outcome: 'disabled' };
  if (d.liveAt + windowMs <= now && d.guardStatus === null) return { outcome: 'missed' }; // its window passed before a sweep saw it
  if (!d.live) {
    // Its evidence so far stays; its log is left alone (nothing went wrong with it).
    return { outcome: (await guardRepository.record(db, d.id, 'superseded', null, now)) ? 'superseded' : 'taken' };
  }

  // 2. count: this deploy within its window; the previous one over the same span, cut where the next one went live
  const until = Math.min(now, d.liveAt + windowMs);
  const previous = await guardRepository.previousLive(db, d.projectId, d.id, d.liveAt);
  const spanMs = previous ? Math.min(until - d.liveAt, previous.nextLiveAt - previous.liveAt) : 0;
  const host = (id: string) => `${id.replace(/_/g, '-')}.${platform.config.SITES_DOMAIN}`.toLowerCase();
  const [current, before] = await Promise.all([
    guardRepository.count(db, analytics, { projectId: d.projectId, deployId: d.id, gitSha: d.gitSha, host: host(d.id), from: d.liveAt, to: until }),
    previous &&
      guardRepository.count(db, analytics, {
        projectId: d.projectId,
        deployId: previous.id,
        gitSha: previous.gitSha,
        host: host(previous.id),
        from: previous.liveAt,
        to: previous.liveAt + spanMs,
      }),
  ]);

  // 3. judge
  const { verdict, evidence } = judge({
    settings: setting,
    liveAt: d.liveAt,
    now: until,
    current,
    previous: previous && before && { ...before, deployId: previous.id, spanMs },
  });
  if (verdict !== 'degraded') return { outcome: (await guardRepository.record(db, d.id, verdict, evidence, now)) ? verdict : 'taken' };

  // 4. act
  if (!(await guardRepository.record(db, d.id, 'degraded', evidence, now))) return { outcome: 'taken' };
  return followThrough(platform, log, d, evidence, previous?.id, setting.autoRollback, now);
}

/**
 * A degraded verdict's follow-through: the rollback (when opted in), its record, the build log's line and
 * deploy.degraded, then marked finished. Run by the sweep that took the verdict, or (`resumed`) by a later sweep when
 * that one failed or died midway: the rollback is not made twice (a resumed one whose deploy is no longer live but whose
 * previous deploy is, made it), deploy.degraded's id is the deploy's, so it is sent once.
 */
async function followThrough(
  platform: GuardPlatform,
  log: Logger,
  d: WatchedDeploy,
  evidence: GuardEvidence,
  previousId: string | undefined,
  autoRollback: boolean,
  now: number,
  resumed = false,
): Promise<{ outcome: GuardOutcome; refused?: RollbackRefusal }> {
  const { db, analytics } = platform;
  let rollback: { to: string } | { refused: RollbackRefusal };
  if (evidence.rolledBackTo) rollback = { to: evidence.rolledBackTo };
  else if (!autoRollback) {
    evidence.note = 'not rolled back: the project did not opt in to autoRollback';
    rollback = { refused: 'not_opted_in' };
  } else if (resumed && !d.live && previousId && (await guardRepository.liveOf(db, d.projectId)) === previousId) rollback = { to: previousId };
  else rollback = await rollBack(platform, d, previousId, evidence);
  const rolledBackTo = 'to' in rollback ? rollback.to : null;
  if (rolledBackTo) {
    evidence.rolledBackTo = rolledBackTo;
    await guardRepository.record(db, d.id, 'rolled_back', evidence, now, 'degraded');
  } else await guardRepository.record(db, d.id, 'degraded', evidence, now, 'degraded');
  const line = rolledBackTo
    ? `guarded rollout: rolled back automatically to ${rolledBackTo}: ${evidence.reasons.join('; ')}`
    : `guarded rollout: degraded: ${evidence.reasons.join('; ')} (${evidence.note})`;
  log.warn({ deployId: d.id, projectId: d.projectId, reasons: evidence.reasons, rolledBackTo, resumed }, 'guarded rollout: deploy degraded');
  const data: DeployDegradedData = {
    deployId: d.id,
    branch: d.branch,
    gitSha: d.gitSha,
    environment: 'production',
    url: `${publicBaseUrl(platform.config).replace(/\/+$/, '')}/projects/${encodeURIComponent(d.slug)}/deploys/${d.id}`,
    rolledBack: rolledBackTo !== null,
    rolledBackTo,
    evidence,
  };
  await publishProjectEvent(platform, { id: `deploy.degraded:${d.id}`, projectId: d.projectId, event: 'deploy.degraded', data });
  // After the publish (sent once whatever the retries): a follow-through resumed after a failed publish logs once.
  await guardRepository.appendLogLine(db, analytics, d.projectId, d.id, line, now);
  await guardRepository.finished(db, d.id);
  return 'to' in rollback ? { outcome: 'rolled_back' } : { outcome: 'degraded', refused: rollback.refused };
}

/** The previous deploy made live again while this one still is; or why not (also in evidence.note). */
async function rollBack(
  platform: GuardPlatform,
  d: WatchedDeploy,
  previousId: string | undefined,
  evidence: GuardEvidence,
): Promise<{ to: string } | { refused: RollbackRefusal }> {
  if (!previousId) {
    evidence.note = 'not rolled back: there is no earlier production deploy to roll back to';
    return { refused: 'no_previous_deploy' };
  }
  if (await liveDeployRepository.makeLive(platform.db, d.projectId, previousId, d.id)) return { to: previousId };
  evidence.note = `not rolled back: it is no longer the live deploy, or the output of ${previousId} was cleaned up`;
  return { refused: 'no_longer_live' };
}
