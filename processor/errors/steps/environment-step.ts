import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { Clock } from '../../../platform/clock.ts';
import { createEnvironmentResolver } from '../../environment/environment-resolver.ts';
import { environmentRepository, type EnvironmentRepository } from '../../environment/environment-repository.ts';
import { loadDeployNaming, nameDeploy, type DeployQuestion } from '../../environment/deploy-naming.ts';
import { drop, ok, type EnvironmentStampedEvent, type FingerprintedEvent, type StepOutcome } from './outcome.ts';

/**
 * Environment stamping (spec §7.4) of a batch of error events, by the shared resolver
 * (processor/environment/environment-resolver.ts). An event of a project that no longer exists is dropped.
 * Each kept event is also given the deploy that served it (issue 41), by release health's rule
 * (processor/environment/deploy-naming.ts): its deployId or gitSha, else its Origin's deploy host, else a production
 * Origin's live deploy built before the event was received; none when no deploy can be named.
 */
export { DOMAINS_TTL_MS } from '../../environment/environment-resolver.ts';

export function createEnvironmentStep(deps: {
  db: Queryable;
  environment?: EnvironmentRepository;
  clock?: Clock;
  domainsTtlMs?: number;
  sitesDomain?: string;
}) {
  const resolve = createEnvironmentResolver(deps);
  const sitesDomain = deps.sitesDomain ?? 'localhost';
  return async function environmentStep(events: FingerprintedEvent[]): Promise<Array<StepOutcome<EnvironmentStampedEvent>>> {
    const environments = await resolve(
      events.map((e) => ({ projectId: e.projectId, originHost: e.originHost, deployId: e.event.deployId, gitSha: e.event.gitSha })),
    );
    const questions: DeployQuestion[] = [];
    events.forEach((e, i) => {
      const environment = environments[i];
      if (environment)
        questions.push({
          projectId: e.projectId,
          originHost: e.originHost,
          release: e.event.deployId ?? e.event.gitSha,
          receivedAt: e.receivedAt,
          environment,
        });
    });
    const naming = await loadDeployNaming({ db: deps.db, environment: deps.environment ?? environmentRepository, sitesDomain }, questions);
    let q = 0;
    return events.map((e, i) => {
      const environment = environments[i];
      if (!environment) return drop<EnvironmentStampedEvent>('unknown_project');
      const stamped: EnvironmentStampedEvent = {
        projectId: e.projectId,
        originHost: e.originHost,
        receivedAt: e.receivedAt,
        event: e.event,
        fingerprint: e.fingerprint,
        groupId: e.groupId,
        inAppFrame: e.inAppFrame,
        environment,
      };
      const question = questions[q++]!;
      const deployId = nameDeploy(question, naming(question.projectId), sitesDomain);
      if (deployId) stamped.deployId = deployId;
      return ok(stamped);
    });
  };
}
