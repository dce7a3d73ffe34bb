import type { Environment } from '../../schemas/error-event.ts';
import { environmentOfHost, type ProjectDomains } from '../../domain/host-patterns.ts';

export type { ProjectDomains };

/**
 * Environment stamping (spec §7.4), decided by the server only. With an Origin host (and port, as the
 * edge stamped it): the project's production or preview domains, by domain/host-patterns.ts.
 * Without: the deploy id, then the git sha, matched against the project's deploys. Anything not
 * proven is `unknown`, and only `production` may alert.
 */
export interface DeployRef {
  id: string;
  gitSha: string | null;
  environment: 'production' | 'preview';
}

export function resolveEnvironment(
  input: { originHost: string | null; deployId?: string; gitSha?: string },
  domains: ProjectDomains | undefined,
  deploys: { byId: Map<string, DeployRef>; bySha: Map<string, DeployRef> },
): Environment {
  if (input.originHost) {
    if (!domains) return 'unknown';
    return environmentOfHost(domains, input.originHost) ?? 'unknown';
  }
  if (input.deployId) {
    const d = deploys.byId.get(input.deployId);
    if (d) return d.environment;
  }
  if (input.gitSha) {
    const d = deploys.bySha.get(input.gitSha.toLowerCase());
    if (d) return d.environment;
  }
  return 'unknown';
}
