import { createAppAuth } from '@octokit/auth-app';
import { request as octokitRequest } from '@octokit/request';
import type { Config } from './config.ts';
import { guardedFetch } from './guarded-fetch.ts';
import type { OutboundUrlGuard } from './ports/outbound-url-guard.ts';

/**
 * The service's GitHub App (README, "Deploying from GitHub"), the one way a repository is bound to a project:
 *   - the user's side: GitHub's authorize page returns a code, exchanged for a user-to-server token (used once, never
 *     stored), with which `GET /user/installations` and `/user/installations/:id/repositories` say which repositories
 *     the signed-in GitHub account reaches through an installation of the app: a stranger's repository is not among them
 *   - the app's side: installation tokens, scoped to one repository and `contents: read`, minted for a clone; they
 *     expire within the hour
 *   - reporting a deploy (issue 41, processor/github-status/): installation tokens scoped to one repository with
 *     `statuses: write` and `pull_requests: write` only, for its commit status and its pull request's comment
 * @octokit/auth-app makes the app's JWT (RS256 from GITHUB_APP_PRIVATE_KEY), the installation tokens and the code
 * exchange. Every call leaves through the outbound guard (use `provider_api`: https, public addresses only; the tests'
 * guard lets a loopback stand-in through), bounded in time and size. GitHub's web host (the authorize, install and
 * clone addresses) is derived from GITHUB_API_URL as Octokit derives it: api.github.com -> github.com,
 * <host>/api/v3 -> <host>.
 */
export interface GithubRepository {
  id: number;
  fullName: string;
  cloneUrl: string;
  private: boolean;
}

export class GithubAppError extends Error {
  constructor(
    /** code_refused: GitHub did not take the code (expired, used, or not this app's); github_failed: anything else. */
    readonly reason: 'code_refused' | 'github_failed',
    message: string,
  ) {
    super(message);
  }
}

export interface GithubApp {
  /** GitHub's page where the signed-in user authorizes the app, which returns to `redirectUri` with a code and `state`. */
  authorizeUrl(state: string, redirectUri: string): string;
  /** The app's install page (GITHUB_APP_SLUG), which returns with a code and `state` too when the app asks for user authorization on install. */
  installUrl(state: string): string | undefined;
  /** A user's code exchanged for their user-to-server token. Throws GithubAppError. */
  userToken(code: string, redirectUri: string): Promise<string>;
  /**
   * The installation through which the token's user reaches `fullName` (owner/name, any case), with the repository as
   * GitHub names it now; null when no installation the user can access holds it. Throws GithubAppError.
   */
  userRepository(userToken: string, fullName: string): Promise<{ installationId: number; repository: GithubRepository } | null>;
  /** A short-lived token that reads one repository of one installation (contents: read), and the repository as it is now. */
  cloneToken(installationId: number, repositoryId: number): Promise<{ token: string; expiresAt: string; repository: GithubRepository }>;
  /**
   * A client that tells one repository of one installation about a deploy (issue 41): an installation token scoped to
   * that repository with `statuses: write` and `pull_requests: write` (nothing else), and the repository as GitHub names
   * it now. Throws GithubAppError.
   */
  repositoryWriter(installationId: number, repositoryId: number): Promise<RepositoryWriter>;
  /** GitHub's web host, for clone URLs (`https://github.com`). */
  readonly webUrl: string;
}

/** Commit statuses and pull-request comments of one repository; every call throws GithubAppError on failure. */
export interface RepositoryWriter {
  repository: GithubRepository;
  /** Set a commit status (POST /repos/:o/:r/statuses/:sha); GitHub's id for it. */
  setStatus(sha: string, s: { state: 'pending' | 'success' | 'failure' | 'error'; targetUrl: string; description: string; context: string }): Promise<number>;
  /** Open pull requests whose head is this commit (GET /repos/:o/:r/commits/:sha/pulls), their numbers, at most 100. */
  pullsOf(sha: string): Promise<number[]>;
  /** The id of the pull request's comment whose body holds `marker`, among its first 100 comments. */
  findComment(pr: number, marker: string): Promise<number | undefined>;
  createComment(pr: number, body: string): Promise<number>;
  /** False when the comment is gone (deleted by someone): the caller posts a new one. */
  updateComment(commentId: number, body: string): Promise<boolean>;
}

const TIMEOUT_MS = 15_000;
const MAX_BYTES = 4 * 1024 * 1024;
const PAGE = 100;
/** Pages read of one listing: 1,000 installations a user reaches, 1,000 repositories of one installation. */
const MAX_PAGES = 10;

/** GitHub's web host for an API base, as @octokit/oauth-methods derives it. */
export function githubWebUrl(apiUrl: string): string {
  const base = apiUrl.replace(/\/+$/, '');
  if (/^https:\/\/(api\.)?github\.com$/.test(base)) return 'https://github.com';
  if (/^https:\/\/api\..*\.ghe\.com$/.test(base)) return base.replace('api.', '');
  return base.replace(/\/api\/v3$/, '');
}

/** The app, or undefined when configuration names none (connecting a repository then answers 503). */
export function githubAppFromConfig(
  config: Pick<Config, 'GITHUB_APP_ID' | 'GITHUB_APP_PRIVATE_KEY' | 'GITHUB_APP_CLIENT_ID' | 'GITHUB_APP_CLIENT_SECRET' | 'GITHUB_APP_SLUG' | 'GITHUB_API_URL'>,
  guard: OutboundUrlGuard,
  opts: { timeoutMs?: number } = {},
): GithubApp | undefined {
  const { GITHUB_APP_ID: appId, GITHUB_APP_PRIVATE_KEY: privateKey, GITHUB_APP_CLIENT_ID: clientId, GITHUB_APP_CLIENT_SECRET: clientSecret } = config;
  if (!appId || !privateKey || !clientId || !clientSecret) return undefined;
  const apiUrl = config.GITHUB_API_URL.replace(/\/+$/, '');
  const webUrl = githubWebUrl(apiUrl);
  const request = octokitRequest.defaults({
    baseUrl: apiUrl,
    headers: { 'user-agent': 'service-github-app', 'x-github-api-version': '2022-11-28' },
    request: { fetch: guardedFetch({ guard, use: 'provider_api', timeoutMs: opts.timeoutMs ?? TIMEOUT_MS, maxBytes: MAX_BYTES }) },
  });
  const auth = createAppAuth({ appId, privateKey, clientId, clientSecret, request, log: { warn: () => undefined } });

  const repositoryOf = (r: { id?: unknown; full_name?: unknown; clone_url?: unknown; private?: unknown }): GithubRepository | undefined =>
    typeof r.id === 'number' && typeof r.full_name === 'string'
      ? {
          id: r.id,
          fullName: r.full_name,
          cloneUrl: typeof r.clone_url === 'string' ? r.clone_url : `${webUrl}/${r.full_name}.git`,
          private: r.private === true,
        }
      : undefined;

  /** Every item of a paged listing (`key` of each page), at most MAX_PAGES pages. */
  async function listAll<T>(route: string, token: string, key: string, params: Record<string, unknown> = {}): Promise<T[]> {
    const all: T[] = [];
    for (let page = 1; page <= MAX_PAGES; page++) {
      const { data } = await request(route, { ...params, per_page: PAGE, page, headers: { authorization: `token ${token}` } });
      const items = ((data as Record<string, unknown>)[key] ?? []) as T[];
      all.push(...items);
      if (items.length < PAGE) break;
    }
    return all;
  }

  const failed = (what: string, err: unknown): GithubAppError =>
    err instanceof GithubAppError ? err : new GithubAppError('github_failed', `${what}: ${(err as { status?: number }).status ?? (err as Error).message}`);

  return {
    webUrl,
    authorizeUrl(state, redirectUri) {
      const q = new URLSearchParams({ client_id: clientId, redirect_uri: redirectUri, state, allow_signup: 'false' });
      return `${webUrl}/login/oauth/authorize?${q}`;
    },
    installUrl(state) {
      return config.GITHUB_APP_SLUG ? `${webUrl}/apps/${config.GITHUB_APP_SLUG}/installations/new?${new URLSearchParams({ state })}` : undefined;
    },
    async userToken(code, redirectUri) {
      try {
        const a = (await auth({ type: 'oauth-user', code, redirectUrl: redirectUri })) as { token: string };
        return a.token;
      } catch (err) {
        // GitHub answers a code it does not take with 200 and `error` (bad_verification_code), which Octokit throws as a 400.
        if ((err as { status?: number }).status === 400 || (err as { status?: number }).status === 401) {
          throw new GithubAppError('code_refused', 'GitHub did not take the authorization code (expired, used, or not for this app)');
        }
        throw failed('exchanging the code', err);
      }
    },
    async userRepository(userToken, fullName) {
      try {
        const [owner] = fullName.toLowerCase().split('/');
        const installations = await listAll<{ id: number; account?: { login?: string } }>('GET /user/installations', userToken, 'installations');
        // An installation is on one account and holds only that account's repositories.
        for (const inst of installations.filter((i) => typeof i.id === 'number' && i.account?.login?.toLowerCase() === owner)) {
          const repos = await listAll<Record<string, unknown>>('GET /user/installations/{installation_id}/repositories', userToken, 'repositories', {
            installation_id: inst.id,
          });
          const hit = repos.find((r) => typeof r.full_name === 'string' && r.full_name.toLowerCase() === fullName.toLowerCase());
          const repository = hit && repositoryOf(hit);
          if (repository) return { installationId: inst.id, repository };
        }
        return null;
      } catch (err) {
        throw failed("listing the user's installations", err);
      }
    },
    async cloneToken(installationId, repositoryId) {
      try {
        const a = (await auth({ type: 'installation', installationId, repositoryIds: [repositoryId], permissions: { contents: 'read' } })) as {
          token: string;
          expiresAt: string;
        };
        const { data } = await request('GET /repositories/{id}', { id: repositoryId, headers: { authorization: `token ${a.token}` } });
        const repository = repositoryOf(data as Record<string, unknown>);
        if (!repository || repository.id !== repositoryId) throw new GithubAppError('github_failed', 'GitHub answered another repository');
        return { token: a.token, expiresAt: a.expiresAt, repository };
      } catch (err) {
        throw failed(`an installation token for repository ${repositoryId}`, err);
      }
    },
    async repositoryWriter(installationId, repositoryId) {
      let token: string;
      let repository: GithubRepository | undefined;
      try {
        const a = (await auth({
          type: 'installation',
          installationId,
          repositoryIds: [repositoryId],
          permissions: { statuses: 'write', pull_requests: 'write' },
        })) as { token: string };
        token = a.token;
        const { data } = await request('GET /repositories/{id}', { id: repositoryId, headers: { authorization: `token ${token}` } });
        repository = repositoryOf(data as Record<string, unknown>);
      } catch (err) {
        throw failed(`a status token for repository ${repositoryId}`, err);
      }
      if (!repository || repository.id !== repositoryId) throw new GithubAppError('github_failed', 'GitHub answered another repository');
      const [owner, repo] = repository.fullName.split('/');
      const call = async <T>(what: string, route: string, params: Record<string, unknown>): Promise<T> => {
        try {
          const { data } = await request(route, { owner, repo, ...params, headers: { authorization: `token ${token}` } });
          return data as T;
        } catch (err) {
          throw failed(what, err);
        }
      };
      const idOf = (data: unknown) => Number((data as { id?: unknown }).id);
      return {
        repository,
        async setStatus(sha, st) {
          const body = { state: st.state, target_url: st.targetUrl, description: st.description.slice(0, 140), context: st.context };
          return idOf(await call('setting a commit status', 'POST /repos/{owner}/{repo}/statuses/{sha}', { sha, ...body }));
        },
        async pullsOf(sha) {
          const data = await call<Array<{ number?: unknown; state?: unknown }>>(
            'listing the pull requests of a commit',
            'GET /repos/{owner}/{repo}/commits/{sha}/pulls',
            {
              sha,
              per_page: PAGE,
            },
          );
          return (Array.isArray(data) ? data : []).filter((p) => typeof p.number === 'number' && p.state !== 'closed').map((p) => p.number as number);
        },
        async findComment(pr, marker) {
          const data = await call<Array<{ id?: unknown; body?: unknown }>>('listing comments', 'GET /repos/{owner}/{repo}/issues/{issue_number}/comments', {
            issue_number: pr,
            per_page: PAGE,
          });
          const hit = (Array.isArray(data) ? data : []).find((c) => typeof c.body === 'string' && c.body.includes(marker) && typeof c.id === 'number');
          return hit ? (hit.id as number) : undefined;
        },
        async createComment(pr, body) {
          return idOf(await call('commenting', 'POST /repos/{owner}/{repo}/issues/{issue_number}/comments', { issue_number: pr, body }));
        },
        async updateComment(commentId, body) {
          try {
            await request('PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}', {
              owner,
              repo,
              comment_id: commentId,
              body,
              headers: { authorization: `token ${token}` },
            });
            return true;
          } catch (err) {
            if ((err as { status?: number }).status === 404) return false;
            throw failed('updating the comment', err);
          }
        },
      };
    },
  };
}
