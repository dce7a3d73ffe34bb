import { githubAppFromConfig } from '../platform/github-app.ts';
import type { Platform } from '../platform/platform.ts';
import { buildsRepository } from './builds-repository.ts';

/**
 * The checkout of a repository connected through the GitHub App (issue 38): when a project builds from the clone URL
 * of one of its own connections, the builder asks GitHub for an installation token that reads that one repository
 * (by id, `contents: read`, expiring within the hour) and clones GitHub's current URL for that id, so a private
 * repository clones, a renamed one follows its id, and a repository re-created under the old name is not read. The
 * token goes to the clone step only, as git's `http.<url>.extraHeader` in that step's environment (never written to
 * the checkout's .git/config); the build command's step never has it, and the build log masks it were it printed. The
 * clone itself leaves through the build's egress proxy, TLS end to end. A project whose source is another project's
 * connected repository gets no token.
 */
export interface CloneAuth {
  /** The repository's clone URL: git sends the header only to URLs under it. */
  url: string;
  /** `Authorization: Basic ...` for `x-access-token:<token>`, GitHub's form for installation tokens over git. */
  header: string;
}

export type GithubCheckout = { repoUrl: string; token: string; auth: CloneAuth } | { refused: string } | undefined;

export function githubCheckout(platform: Pick<Platform, 'db' | 'config' | 'outbound'>): (projectId: string, repoUrl: string) => Promise<GithubCheckout> {
  const app = githubAppFromConfig(platform.config, platform.outbound);
  return async (projectId, repoUrl) => {
    const c = await buildsRepository.githubConnection(platform.db, projectId, repoUrl);
    if (!c) return undefined;
    if (!app) return { refused: 'the repository is connected through the GitHub App, and no GitHub App is configured on this builder (GITHUB_APP_*)' };
    try {
      const t = await app.cloneToken(c.installationId, c.repoId);
      const basic = Buffer.from(`x-access-token:${t.token}`).toString('base64');
      return { repoUrl: t.repository.cloneUrl, token: t.token, auth: { url: t.repository.cloneUrl, header: `Authorization: Basic ${basic}` } };
    } catch (err) {
      return { refused: `GitHub gave no token to read repository ${c.repoId} (${(err as Error).message}): is the app still installed on it?` };
    }
  };
}
