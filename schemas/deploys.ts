import { z } from 'zod';

/**
 * Deploys (spec §1, §2.4, §3.3, §4.4): states, why a deploy failed, and the message that queues one.
 * The spec shows no states (§3.3 "not shown"); these follow Vercel's (QUEUED, BUILDING, READY, ERROR,
 * CANCELED): queued -> building -> ready | failed | canceled.
 */
export const DEPLOY_STATES = ['queued', 'building', 'ready', 'failed', 'canceled'] as const;
export type DeployState = (typeof DEPLOY_STATES)[number];
/** States a deploy does not leave. */
export const FINISHED_DEPLOY_STATES: readonly DeployState[] = ['ready', 'failed', 'canceled'];
/** States in which a production deploy holds the project's production slot (§3.3). */
export const ACTIVE_DEPLOY_STATES = ['queued', 'building'] as const satisfies readonly DeployState[];

/**
 * Why a deploy failed, snake_case:
 * - checkout_failed: the repository or branch could not be checked out;
 * - build_failed: the build command exited non-zero (exitCode says how);
 * - timeout: the build ran past its wall-clock limit and was killed;
 * - output_missing: the build succeeded but its output directory does not exist;
 * - builder_lost: the builder stopped renewing its lease (killed, crashed);
 * - source_missing: the project has no build source configured;
 * - sandbox_unavailable: this builder cannot sandbox builds (bubblewrap missing) and BUILD_SANDBOX is not off;
 * - limits_unavailable: this builder cannot make a cgroup for the build's memory and process limits (neither a
 *   delegated cgroup v2 subtree nor the v1 hierarchies) and BUILD_ALLOW_UNLIMITED is not set: nothing ran;
 * - memory_limit, process_limit, cpu_limit, disk_limit: the build ran into a resource limit and was stopped;
 * - output_escapes: the output directory, or a link in it, leads outside (the log names it);
 * - too_many_files, file_too_large, artifact_too_large: the output is over an artifact limit;
 * - quota_exceeded: the output does not fit in what its project or account may keep (ARTIFACTS_PROJECT_MAX_MB,
 *   ARTIFACTS_ACCOUNT_MAX_MB, counted at apparent size; the log names the limit): nothing of it was kept;
 * - disk_full: the service's data directory is out of disk space (DATA_DIR_MIN_FREE_MB): the build did not start, or
 *   its artifact could not be kept. Redeploy once there is room.
 */
export const DEPLOY_FAILURE_REASONS = [
  'checkout_failed',
  'build_failed',
  'timeout',
  'output_missing',
  'builder_lost',
  'source_missing',
  'sandbox_unavailable',
  'limits_unavailable',
  'memory_limit',
  'process_limit',
  'cpu_limit',
  'disk_limit',
  'output_escapes',
  'too_many_files',
  'file_too_large',
  'artifact_too_large',
  'quota_exceeded',
  'disk_full',
] as const;

/** What one deploy's artifact may hold (ARTIFACT_MAX_* in the configuration). */
export interface ArtifactLimits {
  maxBytes: number;
  maxFiles: number;
  maxFileBytes: number;
}
export type DeployFailureReason = (typeof DEPLOY_FAILURE_REASONS)[number];

/**
 * What queued a deploy: a deploy hook, an API call, a rollback, a push to a connected repository (/v1/webhooks/code_host),
 * or a prebuilt upload (`cx deploy --prebuilt`: no build ran).
 */
export const DEPLOY_TRIGGERS = ['hook', 'api', 'rollback', 'push', 'upload'] as const;
export type DeployTrigger = (typeof DEPLOY_TRIGGERS)[number];

/** A git branch name as git check-ref-format allows it (a subset: no `..`, no leading `-`, printable). */
export const BranchSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)[A-Za-z0-9._\/-]+(?<!\.lock)(?<![./])$/, 'must be a git branch name');
