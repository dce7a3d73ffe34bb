import type { Config } from '../platform/config.ts';
import type { RelationalStore } from '../platform/ports/relational-store.ts';
import { siteUrls } from '../platform/sites/site-urls.ts';
import type { ClaimedDeploy } from './builds-repository.ts';
import { buildVariablesRepository } from './build-variables-repository.ts';

/**
 * A build's environment variables (issue 42), what build-run.ts hands its build command:
 *   1. the project's variables for the deploy's environment: a production build gets the production ones; a preview
 *      build the preview ones, where a variable bound to its branch wins over the plain preview value of its key
 *   2. the system variables over them (their CX_ and VITE_CX_ keys are reserved, so none is overridden in practice):
 *      CX_DEPLOY_ID, CX_ENVIRONMENT, CX_BRANCH, CX_DEPLOY_URL, CX_PRODUCTION_URL, CX_INGEST_KEY, and CX_GIT_SHA once
 *      the checkout knows it (gitShaVariables); each with a VITE_ copy, since Vite only exposes VITE_-prefixed
 *      variables to `import.meta.env` (as Vercel's VITE_VERCEL_* are)
 * The secret values are the build log's to mask (build-log.ts); the ingest key is public, never masked.
 */
export interface StoredVariable {
  name: string;
  value: string;
  secret: boolean;
  production: boolean;
  preview: boolean;
  /** '' for every branch. */
  branch: string;
}

export type BuildEnvironment = ClaimedDeploy['environment'];

/** Step 1: the variables a build of `environment` on `branch` gets (pure). */
export function variablesFor(rows: readonly StoredVariable[], environment: BuildEnvironment, branch: string): Record<string, string> {
  const env: Record<string, string> = {};
  const applies = rows.filter((r) => (environment === 'production' ? r.production : r.preview));
  for (const r of applies) if (!r.branch) env[r.name] = r.value;
  if (environment === 'preview') for (const r of applies) if (r.branch === branch) env[r.name] = r.value;
  return env;
}

export interface SystemValues {
  deployId: string;
  environment: BuildEnvironment;
  branch: string;
  deployUrl: string;
  productionUrl: string;
  ingestKey: string;
}

/** Step 2: the system variables, each with its VITE_ copy (pure). */
export function systemVariables(s: SystemValues): Record<string, string> {
  return withViteCopies({
    CX_DEPLOY_ID: s.deployId,
    CX_ENVIRONMENT: s.environment,
    CX_BRANCH: s.branch,
    CX_DEPLOY_URL: s.deployUrl,
    CX_PRODUCTION_URL: s.productionUrl,
    CX_INGEST_KEY: s.ingestKey,
  });
}

/** CX_GIT_SHA (and its VITE_ copy), known once the checkout is made. */
export function gitShaVariables(sha: string): Record<string, string> {
  return withViteCopies({ CX_GIT_SHA: sha });
}

const withViteCopies = (vars: Record<string, string>): Record<string, string> => ({
  ...vars,
  ...Object.fromEntries(Object.entries(vars).map(([k, v]) => [`VITE_${k}`, v])),
});

/** Steps 1 and 2 for a claimed deploy: its variables and the system ones, and the secret values to mask. */
export async function buildVariables(
  platform: { db: RelationalStore; config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT' | 'SITES_DOMAIN'>; clock: { now(): number } },
  d: ClaimedDeploy,
): Promise<{ env: Record<string, string>; secrets: string[] }> {
  const rows = await buildVariablesRepository.variables(platform.db, d.projectId);
  const urls = siteUrls(platform.config);
  const system = systemVariables({
    deployId: d.id,
    environment: d.environment,
    branch: d.branch,
    deployUrl: urls.deploy(d.id),
    productionUrl: urls.project(d.projectSlug),
    ingestKey: await buildVariablesRepository.ingestKey(platform.db, d.projectId, platform.clock.now()),
  });
  return { env: { ...variablesFor(rows, d.environment, d.branch), ...system }, secrets: rows.filter((r) => r.secret).map((r) => r.value) };
}
