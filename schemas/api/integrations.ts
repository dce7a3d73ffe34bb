import { z } from 'zod';

/** `/v1/integrations/github` (spec §4.1): GitHub repositories connected to projects; their pushes queue deploys. */
export const GITHUB_REPO = /^[A-Za-z0-9-]{1,39}\/[A-Za-z0-9._-]{1,100}$/;

export const GithubConnectionSchema = z.object({
  id: z.string().describe('`ghc_...`'),
  project: z.string().describe('the project slug'),
  repository: z.string().describe('owner/name, as GitHub names it'),
  cloneUrl: z.string(),
  createdAt: z.string(),
});
export type GithubConnection = z.infer<typeof GithubConnectionSchema>;

export const ConnectGithubBody = z
  .object({
    project: z.string().min(1).max(100).describe('the slug of a project you are a member of'),
    repository: z.string().regex(GITHUB_REPO, 'owner/name'),
    cloneUrl: z.string().max(2048).optional().describe("default https://github.com/<owner>/<name>.git; becomes the project's build source when it has none"),
  })
  .strict();
export type ConnectGithubBody = z.infer<typeof ConnectGithubBody>;
export const GithubConnectionAnswer = z.object({ connection: GithubConnectionSchema });
export type GithubConnectionAnswer = z.infer<typeof GithubConnectionAnswer>;
export const GithubConnectionList = z.object({ connections: z.array(GithubConnectionSchema) });
export type GithubConnectionList = z.infer<typeof GithubConnectionList>;
export const ConnectionIdParams = z.object({ id: z.string().max(64) });
