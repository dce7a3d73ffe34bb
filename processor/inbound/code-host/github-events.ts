import type { InboundEvent } from '../../../schemas/bus/inbound-events.ts';
import { obj, str } from '../payload.ts';

/**
 * What a GitHub delivery asks of the platform: a deploy of a branch of a repository, or nothing (and why). Pure: the
 * payload's fields are read defensively, as a stranger's JSON.
 *   push                      a branch's new head: deploy it; a deletion (`deleted`, or an all-zero `after`) or a tag
 *                             push deploys nothing; `[skip ci]` / `[skip deploy]` in the head commit message skips
 *   pull_request              opened, reopened or synchronize, from a branch of the same repository: a preview of its
 *                             head branch (a fork's branch cannot be cloned from the connected repository: skipped)
 *   anything else             nothing
 */
export type CodeHostIntent =
  | { kind: 'deploy'; repository: string; branch: string; sha: string | null }
  | { kind: 'nothing'; why: 'not_a_deploy_event' | 'branch_deleted' | 'not_a_branch' | 'skip_requested' | 'fork' | 'malformed' };

const SKIP = /\[(skip ci|ci skip|skip deploy|deploy skip|no ci)\]/i;
const ZERO_SHA = /^0+$/;

export function codeHostIntent(e: Pick<InboundEvent, 'event' | 'payload'>): CodeHostIntent {
  const p = e.payload;
  const repository = str(obj(p.repository)?.full_name);
  if (e.event === 'push') {
    const ref = str(p.ref);
    if (!repository || !ref) return { kind: 'nothing', why: 'malformed' };
    if (!ref.startsWith('refs/heads/')) return { kind: 'nothing', why: 'not_a_branch' };
    const after = str(p.after);
    if (p.deleted === true || (after && ZERO_SHA.test(after))) return { kind: 'nothing', why: 'branch_deleted' };
    const message = str(obj(p.head_commit)?.message) ?? '';
    if (SKIP.test(message)) return { kind: 'nothing', why: 'skip_requested' };
    return { kind: 'deploy', repository, branch: ref.slice('refs/heads/'.length), sha: after ?? null };
  }
  if (e.event === 'pull_request') {
    const action = str(p.action);
    if (action !== 'opened' && action !== 'reopened' && action !== 'synchronize') return { kind: 'nothing', why: 'not_a_deploy_event' };
    const head = obj(obj(p.pull_request)?.head);
    const branch = str(head?.ref);
    const headRepo = str(obj(head?.repo)?.full_name);
    if (!repository || !branch) return { kind: 'nothing', why: 'malformed' };
    if (headRepo?.toLowerCase() !== repository.toLowerCase()) return { kind: 'nothing', why: 'fork' };
    return { kind: 'deploy', repository, branch, sha: str(head?.sha) ?? null };
  }
  return { kind: 'nothing', why: 'not_a_deploy_event' };
}
