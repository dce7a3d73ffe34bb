import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { num, obj, str } from '../payload.ts';

/**
 * What a GitHub App delivery asks of the platform: a deploy of a branch of a repository, an unbinding, or nothing (and
 * why). Pure: the payload's fields are read defensively, as a stranger's JSON. A repository is named by GitHub's id and
 * the installation the delivery came through, never by its name (anyone can create a repository with a freed name).
 *   push                      a branch's new head: deploy it; a deletion (`deleted`, or an all-zero `after`) or a tag
 *                             push deploys nothing; `[skip ci]` / `[skip deploy]` in the head commit message skips
 *   pull_request              opened, reopened or synchronize, from a branch of the same repository: a preview of its
 *                             head branch (a fork's branch cannot be cloned from the connected repository: skipped)
 *   installation              deleted: the app is gone from that account, every connection through it is unbound
 *   installation_repositories removed: those repositories left the installation, their connections are unbound
 *   anything else             nothing
 */
export type CodeHostIntent =
  | {
      kind: 'deploy';
      repositoryId: number;
      installationId: number | null;
      ref: string;
      branch: string;
      sha: string | null;
      /** The pull request's number, for a pull_request delivery (its commit status and comment, processor/github-status/). */
      prNumber: number | null;
    }
  | { kind: 'unbind'; installationId: number; repositoryIds: number[] | 'all' }
  | { kind: 'nothing'; why: 'not_a_deploy_event' | 'branch_deleted' | 'not_a_branch' | 'skip_requested' | 'fork' | 'malformed' };

const SKIP = /\[(skip ci|ci skip|skip deploy|deploy skip|no ci)\]/i;
const ZERO_SHA = /^0+$/;
/** Repositories one installation_repositories event may remove (GitHub sends them in one delivery). */
const MAX_REMOVED = 10_000;

export function codeHostIntent(e: Pick<InboundEvent, 'event' | 'payload'>): CodeHostIntent {
  const p = e.payload;
  const repositoryId = num(obj(p.repository)?.id);
  const installationId = num(obj(p.installation)?.id);
  if (e.event === 'push') {
    const ref = str(p.ref);
    if (repositoryId === null || !ref) return { kind: 'nothing', why: 'malformed' };
    if (!ref.startsWith('refs/heads/')) return { kind: 'nothing', why: 'not_a_branch' };
    const after = str(p.after);
    if (p.deleted === true || (after && ZERO_SHA.test(after))) return { kind: 'nothing', why: 'branch_deleted' };
    const message = str(obj(p.head_commit)?.message) ?? '';
    if (SKIP.test(message)) return { kind: 'nothing', why: 'skip_requested' };
    return { kind: 'deploy', repositoryId, installationId, ref, branch: ref.slice('refs/heads/'.length), sha: after ?? null, prNumber: null };
  }
  if (e.event === 'pull_request') {
    const action = str(p.action);
    if (action !== 'opened' && action !== 'reopened' && action !== 'synchronize') return { kind: 'nothing', why: 'not_a_deploy_event' };
    const head = obj(obj(p.pull_request)?.head);
    const branch = str(head?.ref);
    if (repositoryId === null || !branch) return { kind: 'nothing', why: 'malformed' };
    if (num(obj(head?.repo)?.id) !== repositoryId) return { kind: 'nothing', why: 'fork' };
    const prNumber = num(obj(p.pull_request)?.number) ?? num(p.number);
    return { kind: 'deploy', repositoryId, installationId, ref: `refs/heads/${branch}`, branch, sha: str(head?.sha) ?? null, prNumber };
  }
  if (e.event === 'installation' && str(p.action) === 'deleted') {
    if (installationId === null) return { kind: 'nothing', why: 'malformed' };
    return { kind: 'unbind', installationId, repositoryIds: 'all' };
  }
  if (e.event === 'installation_repositories' && str(p.action) === 'removed') {
    const removed = Array.isArray(p.repositories_removed) ? p.repositories_removed.slice(0, MAX_REMOVED) : [];
    const repositoryIds = removed.map((r) => num(obj(r)?.id)).filter((id): id is number => id !== null);
    if (installationId === null || !repositoryIds.length) return { kind: 'nothing', why: 'malformed' };
    return { kind: 'unbind', installationId, repositoryIds };
  }
  return { kind: 'nothing', why: 'not_a_deploy_event' };
}
