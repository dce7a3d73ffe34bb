import type { Environment } from '../../schemas/error-event.ts';

/**
 * Environment stamping (spec §7.4), decided by the server only. With an Origin host: the project's
 * production or preview domains. Without: the deploy id, then the git sha, matched against the
 * project's deploys. Anything not proven is `unknown`, and only `production` may alert.
 */
export interface ProjectDomains {
  productionDomains: string[];
  previewDomains: string[];
}

export interface DeployRef {
  id: string;
  gitSha: string | null;
  environment: 'production' | 'preview';
}

/** Exact host, or `*.example.com` for any subdomain of example.com (not the apex). */
export function hostMatches(host: string, pattern: string): boolean {
  const h = stripPort(host.toLowerCase()).replace(/\.$/, '');
  const p = pattern.toLowerCase().trim().replace(/\.$/, '');
  if (!p) return false;
  if (p.startsWith('*.')) return h.endsWith(p.slice(1)) && h.length > p.length - 1;
  return h === p;
}

function stripPort(host: string): string {
  if (host.startsWith('[')) return host.replace(/\]:\d+$/, ']');
  return host.replace(/:\d+$/, '');
}

export function resolveEnvironment(
  input: { originHost: string | null; deployId?: string; gitSha?: string },
  domains: ProjectDomains | undefined,
  deploys: { byId: Map<string, DeployRef>; bySha: Map<string, DeployRef> },
): Environment {
  if (input.originHost) {
    if (!domains) return 'unknown';
    if (domains.productionDomains.some((d) => hostMatches(input.originHost!, d))) return 'production';
    if (domains.previewDomains.some((d) => hostMatches(input.originHost!, d))) return 'preview';
    return 'unknown';
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
