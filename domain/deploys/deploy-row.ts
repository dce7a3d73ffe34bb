import type { StoredDeploy } from '../../schemas/api/deploys.ts';
import type { GuardEvidence, GuardStatus } from '../../schemas/guarded-rollout.ts';

/** A row of `deploys` and the deploy it is (shared by the API's reads and the queueing rule). */
export interface DeployRow {
  id: string;
  project_id: string;
  branch: string;
  environment: 'production' | 'preview';
  status: string;
  git_sha: string | null;
  trigger_kind: string;
  trigger_id: string | null;
  created_at: Date | string;
  started_at: Date | string | null;
  finished_at: Date | string | null;
  failure_reason: string | null;
  exit_code: number | null;
  guard_status: GuardStatus | null;
  guard_evidence: GuardEvidence | string | null;
  guard_decided_at: Date | string | null;
  framework: string | null;
}
export const DEPLOY_COLUMNS =
  'id, project_id, branch, environment, status, git_sha, trigger_kind, trigger_id, created_at, started_at, finished_at, failure_reason, exit_code, guard_status, guard_evidence, guard_decided_at, framework';
export const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());
export const toDeploy = (r: DeployRow): StoredDeploy => ({
  id: r.id,
  projectId: r.project_id,
  branch: r.branch,
  environment: r.environment,
  status: r.status,
  gitSha: r.git_sha,
  trigger: { kind: r.trigger_kind, id: r.trigger_id },
  createdAt: new Date(r.created_at).toISOString(),
  startedAt: iso(r.started_at),
  finishedAt: iso(r.finished_at),
  failureReason: r.failure_reason,
  exitCode: r.exit_code,
  framework: r.framework,
  // Guarded rollout's verdict (issue 41, builder/guarded-rollout/); null for deploys never watched.
  guard:
    r.guard_status === null
      ? null
      : {
          status: r.guard_status,
          decidedAt: iso(r.guard_decided_at),
          evidence: typeof r.guard_evidence === 'string' ? (JSON.parse(r.guard_evidence) as GuardEvidence) : r.guard_evidence,
        },
});
