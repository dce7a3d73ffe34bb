import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { Clock } from '../../../platform/clock.ts';
import { createEnvironmentResolver } from '../../environment/environment-resolver.ts';
import type { EnvironmentRepository } from '../../environment/environment-repository.ts';
import { drop, ok, type EnvironmentStampedEvent, type FingerprintedEvent, type StepOutcome } from './outcome.ts';

/**
 * Environment stamping (spec §7.4) of a batch of error events, by the shared resolver
 * (processor/environment/environment-resolver.ts). An event of a project that no longer exists is dropped.
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
  return async function environmentStep(events: FingerprintedEvent[]): Promise<Array<StepOutcome<EnvironmentStampedEvent>>> {
    const environments = await resolve(
      events.map((e) => ({ projectId: e.projectId, originHost: e.originHost, deployId: e.event.deployId, gitSha: e.event.gitSha })),
    );
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
      return ok(stamped);
    });
  };
}
