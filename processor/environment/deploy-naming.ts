import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { Environment } from '../../schemas/error-event.ts';
import type { EnvironmentRepository } from './environment-repository.ts';

/**
 * Which deploy a session belongs to (issue 40), decided by the server from what it can prove, in this order:
 *   1. `release` is one of the project's deploy ids (`dep_...`)               that deploy
 *   2. `release` is the git sha of one of the project's deploys (any case)  that deploy (the newest with that sha)
 *   3. the Origin is a deploy's own host (`dep-<id>.<SITES_DOMAIN>`)        that deploy, when it is the project's
 *   4. the Origin is one of the project's production hosts                  the project's live deploy, when it was
 *                                                                            built before the session was received
 *                                                                            (live deploys keep no history: a session
 *                                                                            received before the live one was built
 *                                                                            came from an older one we cannot name)
 * Otherwise no deploy: the session is kept under the release string as sent ('' when none).
 */
export interface DeployNaming {
  byId: Map<string, string>;
  bySha: Map<string, string>;
  live: { id: string; finishedAt: number | null } | undefined;
}

export interface DeployQuestion {
  projectId: string;
  originHost: string | null;
  release: string | undefined;
  receivedAt: number;
  /** As stamped (§7.4): for a browser session, `production` exactly when its Origin is a production host. */
  environment: Environment;
}

/** The deploy id a deploy's own host names (`dep-<hex>.<sitesDomain>`, any port), or undefined. */
export function deployIdOfHost(originHost: string | null, sitesDomain: string): string | undefined {
  if (!originHost) return undefined;
  const host = originHost.toLowerCase().replace(/:\d+$/, '');
  const suffix = `.${sitesDomain.toLowerCase()}`;
  if (!host.endsWith(suffix)) return undefined;
  const label = host.slice(0, -suffix.length);
  return /^dep-[0-9a-z]{1,64}$/.test(label) ? `dep_${label.slice(4)}` : undefined;
}

export function nameDeploy(q: DeployQuestion, n: DeployNaming, sitesDomain: string): string {
  const release = q.release?.trim();
  if (release) {
    const byId = n.byId.get(release);
    if (byId) return byId;
    const bySha = n.bySha.get(release.toLowerCase());
    if (bySha) return bySha;
  }
  const hostDeploy = deployIdOfHost(q.originHost, sitesDomain);
  if (hostDeploy) return n.byId.get(hostDeploy) ?? '';
  if (q.originHost && n.live && q.environment === 'production') {
    if (n.live.finishedAt !== null && n.live.finishedAt <= q.receivedAt) return n.live.id;
  }
  return '';
}

/**
 * The deploys a delivery's sessions can name, read in at most two queries: the deploys their releases and deploy
 * hosts name, and the live deploys of the projects with a browser session not named by its release.
 */
export async function loadDeployNaming(
  deps: { db: Queryable; environment: EnvironmentRepository; sitesDomain: string },
  questions: DeployQuestion[],
): Promise<(projectId: string) => DeployNaming> {
  const projectIds = [...new Set(questions.map((q) => q.projectId))];
  const ids = new Set<string>();
  const shas = new Set<string>();
  for (const q of questions) {
    const r = q.release?.trim();
    if (r) {
      if (r.startsWith('dep_')) ids.add(r);
      else shas.add(r.toLowerCase());
    }
    const h = deployIdOfHost(q.originHost, deps.sitesDomain);
    if (h) ids.add(h);
  }
  const byProject = new Map<string, DeployNaming>();
  const of = (projectId: string) => {
    let n = byProject.get(projectId);
    if (!n) byProject.set(projectId, (n = { byId: new Map(), bySha: new Map(), live: undefined }));
    return n;
  };
  if (projectIds.length && (ids.size || shas.size)) {
    // Oldest first: for a sha deployed more than once the newest deploy wins.
    for (const d of await deps.environment.deploys(deps.db, projectIds, [...ids], [...shas])) {
      const n = of(d.projectId);
      n.byId.set(d.id, d.id);
      if (d.gitSha) n.bySha.set(d.gitSha, d.id);
    }
  }
  const needLive = [
    ...new Set(
      questions
        .filter((q) => q.originHost && q.environment === 'production' && !deployIdOfHost(q.originHost, deps.sitesDomain))
        .filter((q) => {
          const r = q.release?.trim();
          const n = byProject.get(q.projectId);
          return !r || !n || (!n.byId.has(r) && !n.bySha.has(r.toLowerCase()));
        })
        .map((q) => q.projectId),
    ),
  ];
  if (needLive.length) for (const [projectId, live] of await deps.environment.liveDeploys(deps.db, needLive)) of(projectId).live = live;
  return of;
}
