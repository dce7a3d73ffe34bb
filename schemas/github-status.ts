import { z } from 'zod';

/**
 * What GitHub hears about a deploy queued by a push or a pull request (issue 41, processor/github-status/): a commit
 * status on its head commit and one comment on its pull request. The project's setting `github` says whether a preview
 * that brings new errors fails its status.
 */
export const GithubSettingsSchema = z
  .object({
    failOnNewErrors: z
      .boolean()
      .default(false)
      .describe(
        "a preview deploy's commit status turns to failure when issues first seen in it (and never in production) appear within 30 minutes of it going ready",
      ),
  })
  .strict();
export type GithubSettings = z.infer<typeof GithubSettingsSchema>;
export const GithubSettingsPatch = z.object({ failOnNewErrors: z.boolean().optional() }).strict();

/** The stored setting with its defaults (an unreadable one reads as the defaults). */
export function githubSettingsOf(stored: unknown): GithubSettings {
  const parsed = GithubSettingsSchema.safeParse(stored ?? {});
  return parsed.success ? parsed.data : GithubSettingsSchema.parse({});
}

/** GitHub's commit status states. */
export const COMMIT_STATES = ['pending', 'success', 'failure', 'error'] as const;
export type CommitState = (typeof COMMIT_STATES)[number];

/** What the deploy page shows of it (GET .../deploys/:id `github`): the pull request and the status last set. */
export const DeployGithubSchema = z.object({
  repositoryId: z.number().int(),
  headSha: z.string(),
  pullRequest: z.number().int().nullable(),
  pullRequestUrl: z.string().nullable(),
  commitStatus: z.enum(COMMIT_STATES).nullable(),
  statusDescription: z.string().nullable(),
});
export type DeployGithub = z.infer<typeof DeployGithubSchema>;

/** The marker a project's pull-request comment carries, so a restart finds its comment instead of posting another. */
export const commentMarker = (projectId: string) => `<!-- cx-preview:${projectId} -->`;
