import { createVerify, generateKeyPairSync, randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { makeSelfSignedCert } from './https-receiver.ts';

/**
 * A stand-in for GitHub's API on loopback (https, a self-signed certificate the test guard trusts), enough of it for the
 * GitHub App flows (platform/github-app.ts): the user OAuth code exchange, `/user/installations` and their repositories
 * for the user a token belongs to, installation tokens minted only for a JWT that verifies against the app's public key
 * (so the service's JWT is checked as GitHub checks it), and `/repositories/:id` for an installation token that holds
 * the repository; and for deploy reports (issue 41) commit statuses, a commit's pull requests and issue comments, for a
 * token that holds the repository and the write permission, or a fault (500, or no answer) the test sets. Its world
 * is set by the test: installations on accounts, repositories in them, which GitHub users reach which installations.
 */
export interface StandinRepo {
  id: number;
  fullName: string;
  private: boolean;
  /** A bare repository served over git's smart HTTP at `<url>/<fullName>.git`, to an installation token that reads it. */
  dir?: string;
}
export interface StandinInstallation {
  id: number;
  account: string;
  repos: StandinRepo[];
}

export interface GithubStandin {
  url: string;
  cert: string;
  appId: string;
  privateKey: string;
  clientId: string;
  clientSecret: string;
  installations: Map<number, StandinInstallation>;
  /** GitHub login -> the installations that user can access. */
  access: Map<string, Set<number>>;
  /** Installation tokens minted: the token, for which installation and repositories, with which permissions. */
  minted: Array<{ token: string; installationId: number; repositoryIds: number[] | undefined; permissions: unknown }>;
  /** Paths asked, in order (method and path, no query). */
  calls: string[];
  /** What git sent as Authorization to a repository (`<fullName> <header or none>`), in order. */
  gitAuth: string[];
  /** Commit statuses set (issue 41), in order: the repository's full name, the commit and what was sent. */
  statuses: Array<{ repo: string; sha: string; state: string; target_url: string; description: string; context: string }>;
  /** Pull-request comments by id: the repository, the pull request's number, the body. */
  comments: Map<number, { repo: string; pr: number; body: string }>;
  /** Open pull requests: `GET commits/:sha/pulls` answers those whose head is the commit. */
  pulls: Array<{ repo: string; number: number; headSha: string }>;
  /** Set by a test: every `/repos/...` call answers this status, or never answers ('hang'). */
  fault: number | 'hang' | undefined;
  /** The configuration that points the service's GitHub App at the stand-in (GITHUB_APP_SLUG left to each test). */
  env: Record<'GITHUB_APP_ID' | 'GITHUB_APP_PRIVATE_KEY' | 'GITHUB_APP_CLIENT_ID' | 'GITHUB_APP_CLIENT_SECRET' | 'GITHUB_API_URL', string>;
  /** A fresh OAuth code for a GitHub user, good once. */
  codeFor(login: string): string;
  close(): Promise<void>;
}

const json = (res: import('node:http').ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

/**
 * `cloneHost`: the name clone URLs use (the certificate holds it), for a build's clone that must go through the egress
 * proxy: inside the sandbox 127.0.0.1 is the sandbox's own loopback, so the test's guard resolves this name to it.
 */
export async function startGithubStandin(opts: { cloneHost?: string } = {}): Promise<GithubStandin> {
  const { key, cert } = makeSelfSignedCert(opts.cloneHost ? [opts.cloneHost] : []);
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const appPublic = publicKey;
  const codes = new Map<string, string>();
  const userTokens = new Map<string, string>();
  const installationTokens = new Map<string, { installationId: number; repositoryIds: number[] | undefined; permissions?: Record<string, string> }>();
  let nextId = 9_000_000;
  const s: GithubStandin = {
    url: '',
    cert,
    appId: String(100_000 + Math.floor(Math.random() * 800_000)),
    privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    clientId: `Iv23li${randomBytes(6).toString('hex')}`,
    clientSecret: randomBytes(20).toString('hex'),
    installations: new Map(),
    access: new Map(),
    minted: [],
    calls: [],
    gitAuth: [],
    statuses: [],
    comments: new Map(),
    pulls: [],
    fault: undefined,
    get env() {
      return {
        GITHUB_APP_ID: s.appId,
        GITHUB_APP_PRIVATE_KEY: s.privateKey,
        GITHUB_APP_CLIENT_ID: s.clientId,
        GITHUB_APP_CLIENT_SECRET: s.clientSecret,
        GITHUB_API_URL: s.url,
      };
    },
    codeFor(login) {
      const code = randomBytes(10).toString('hex');
      codes.set(code, login);
      return code;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };

  /** The app's JWT, verified as GitHub does: RS256 under the app's key, issued by the app, not expired. */
  const appJwtValid = (auth: string | undefined): boolean => {
    const m = /^Bearer ([\w-]+)\.([\w-]+)\.([\w-]+)$/i.exec(auth ?? '');
    if (!m) return false;
    const header = JSON.parse(Buffer.from(m[1]!, 'base64url').toString());
    const claims = JSON.parse(Buffer.from(m[2]!, 'base64url').toString());
    const ok = createVerify('RSA-SHA256').update(`${m[1]}.${m[2]}`).verify(appPublic, Buffer.from(m[3]!, 'base64url'));
    return ok && header.alg === 'RS256' && String(claims.iss) === s.appId && claims.exp > Date.now() / 1000;
  };
  const tokenOf = (auth: string | undefined) => /^(?:token|Bearer) (\S+)$/i.exec(auth ?? '')?.[1];
  const page = <T>(items: T[], q: URLSearchParams) => {
    const per = Number(q.get('per_page') ?? 30);
    const n = Number(q.get('page') ?? 1);
    return items.slice((n - 1) * per, n * per);
  };
  const cloneBase = () => (opts.cloneHost ? s.url.replace('127.0.0.1', opts.cloneHost) : s.url);
  const repoJson = (r: StandinRepo) => ({ id: r.id, full_name: r.fullName, private: r.private, clone_url: `${cloneBase()}/${r.fullName}.git` });

  /** git's smart HTTP through `git http-backend` (CGI), for a token minted for this repository only. */
  function serveGit(
    req: import('node:http').IncomingMessage,
    res: import('node:http').ServerResponse,
    fullName: string,
    rest: string,
    query: string,
    body: Buffer,
  ) {
    const repo = [...s.installations.values()].flatMap((i) => i.repos).find((r) => r.fullName === fullName && r.dir);
    s.gitAuth.push(`${fullName} ${req.headers.authorization ?? 'none'}`);
    const basic = /^Basic (\S+)$/.exec(req.headers.authorization ?? '')?.[1];
    const [user, token] = Buffer.from(basic ?? '', 'base64')
      .toString()
      .split(':');
    const t = installationTokens.get(token ?? '');
    const reads =
      repo &&
      t &&
      user === 'x-access-token' &&
      s.installations.get(t.installationId)?.repos.includes(repo) &&
      (!t.repositoryIds || t.repositoryIds.includes(repo.id));
    if (!reads) return res.writeHead(401, { 'www-authenticate': 'Basic realm="GitHub"' }).end();
    const cgi = spawn('git', ['http-backend'], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: repo.dir,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: rest,
        QUERY_STRING: query,
        REQUEST_METHOD: req.method,
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        HTTP_CONTENT_ENCODING: req.headers['content-encoding'] ?? '',
        CONTENT_LENGTH: String(body.length),
      },
    });
    const out: Buffer[] = [];
    cgi.stdout.on('data', (c: Buffer) => out.push(c));
    cgi.on('close', () => {
      const all = Buffer.concat(out);
      const end = all.indexOf('\r\n\r\n');
      const headers: Record<string, string> = {};
      let status = 200;
      for (const line of all.subarray(0, end).toString().split('\r\n')) {
        const [name, ...v] = line.split(':');
        if (name!.toLowerCase() === 'status') status = Number.parseInt(v.join(':').trim(), 10);
        else headers[name!.toLowerCase()] = v.join(':').trim();
      }
      res.writeHead(status, headers).end(all.subarray(end + 4));
    });
    cgi.stdin.end(body);
  }

  const server = https.createServer({ key, cert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'https://standin');
      s.calls.push(`${req.method} ${url.pathname}`);
      const git = /^\/([^/]+\/[^/]+)\.git(\/.*)$/.exec(url.pathname);
      if (git) return serveGit(req, res, git[1]!, git[2]!, url.search.slice(1), Buffer.concat(chunks));
      const text = Buffer.concat(chunks).toString();
      const body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
      let m: RegExpExecArray | null;
      if (req.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const login = codes.get(String(body.code));
        codes.delete(String(body.code));
        if (body.client_id !== s.clientId || body.client_secret !== s.clientSecret) return json(res, 200, { error: 'incorrect_client_credentials' });
        if (!login) return json(res, 200, { error: 'bad_verification_code', error_description: 'The code passed is incorrect or expired.' });
        const token = `ghu_${randomBytes(16).toString('hex')}`;
        userTokens.set(token, login);
        return json(res, 200, { access_token: token, token_type: 'bearer', scope: '' });
      }
      if (req.method === 'GET' && url.pathname === '/user/installations') {
        const login = userTokens.get(tokenOf(req.headers.authorization) ?? '');
        if (!login) return json(res, 401, { message: 'Bad credentials' });
        const mine = [...(s.access.get(login) ?? [])].map((id) => s.installations.get(id)).filter((i) => i !== undefined);
        return json(res, 200, {
          total_count: mine.length,
          installations: page(mine, url.searchParams).map((i) => ({ id: i.id, account: { login: i.account } })),
        });
      }
      if (req.method === 'GET' && (m = /^\/user\/installations\/(\d+)\/repositories$/.exec(url.pathname))) {
        const login = userTokens.get(tokenOf(req.headers.authorization) ?? '');
        if (!login) return json(res, 401, { message: 'Bad credentials' });
        const inst = s.installations.get(Number(m[1]));
        if (!inst || !s.access.get(login)?.has(inst.id)) return json(res, 404, { message: 'Not Found' });
        return json(res, 200, { total_count: inst.repos.length, repositories: page(inst.repos, url.searchParams).map(repoJson) });
      }
      if (req.method === 'POST' && (m = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(url.pathname))) {
        if (!appJwtValid(req.headers.authorization)) return json(res, 401, { message: 'A JSON web token could not be decoded' });
        const inst = s.installations.get(Number(m[1]));
        if (!inst) return json(res, 404, { message: 'Not Found' });
        const repositoryIds = body.repository_ids as number[] | undefined;
        if (repositoryIds?.some((id) => !inst.repos.some((r) => r.id === id)))
          return json(res, 422, { message: 'There is at least one repository that does not exist or is not accessible' });
        const token = `ghs_${randomBytes(16).toString('hex')}`;
        installationTokens.set(token, { installationId: inst.id, repositoryIds, permissions: body.permissions as Record<string, string> | undefined });
        s.minted.push({ token, installationId: inst.id, repositoryIds, permissions: body.permissions });
        const repos = inst.repos.filter((r) => !repositoryIds || repositoryIds.includes(r.id));
        return json(res, 201, {
          token,
          expires_at: new Date(Date.now() + 3600_000).toISOString(),
          permissions: body.permissions ?? { contents: 'read', metadata: 'read' },
          repository_selection: repositoryIds ? 'selected' : 'all',
          repositories: repos.map(repoJson),
        });
      }
      if (req.method === 'GET' && (m = /^\/repositories\/(\d+)$/.exec(url.pathname))) {
        const t = installationTokens.get(tokenOf(req.headers.authorization) ?? '');
        const id = Number(m[1]);
        const inst = t && s.installations.get(t.installationId);
        const repo = inst?.repos.find((r) => r.id === id);
        if (!t || !repo || (t.repositoryIds && !t.repositoryIds.includes(id))) return json(res, 404, { message: 'Not Found' });
        return json(res, 200, repoJson(repo));
      }
      if ((m = /^\/repos\/([^/]+\/[^/]+)\/(.+)$/.exec(url.pathname)))
        return serveRepos(req.method ?? 'GET', req.headers.authorization, m[1]!, m[2]!, body, res);
      json(res, 404, { message: 'Not Found' });
    });
  });

  /** Statuses, pull requests of a commit and issue comments (issue 41), for a token that holds the repository and the permission. */
  function serveRepos(
    method: string,
    auth: string | undefined,
    fullName: string,
    rest: string,
    body: Record<string, unknown>,
    res: import('node:http').ServerResponse,
  ) {
    if (s.fault === 'hang') return;
    if (s.fault !== undefined) return json(res, s.fault, { message: 'Server Error' });
    const t = installationTokens.get(tokenOf(auth) ?? '');
    const repo = t && s.installations.get(t.installationId)?.repos.find((r) => r.fullName === fullName);
    if (!t || !repo || (t.repositoryIds && !t.repositoryIds.includes(repo.id))) return json(res, 404, { message: 'Not Found' });
    const may = (perm: string) => t.permissions?.[perm] === 'write';
    let m: RegExpExecArray | null;
    if (method === 'POST' && (m = /^statuses\/([0-9a-f]{40})$/.exec(rest))) {
      if (!may('statuses')) return json(res, 403, { message: 'Resource not accessible by integration' });
      const st = {
        repo: fullName,
        sha: m[1]!,
        state: String(body.state),
        target_url: String(body.target_url),
        description: String(body.description),
        context: String(body.context),
      };
      s.statuses.push(st);
      return json(res, 201, { id: nextId++, ...st });
    }
    if (method === 'GET' && (m = /^commits\/([0-9a-f]{40})\/pulls$/.exec(rest))) {
      return json(
        res,
        200,
        s.pulls.filter((p) => p.repo === fullName && p.headSha === m![1]).map((p) => ({ number: p.number, state: 'open' })),
      );
    }
    if (!may('pull_requests') && !may('issues')) return json(res, 403, { message: 'Resource not accessible by integration' });
    if ((m = /^issues\/(\d+)\/comments$/.exec(rest))) {
      const pr = Number(m[1]);
      if (method === 'GET')
        return json(
          res,
          200,
          [...s.comments].filter(([, c]) => c.repo === fullName && c.pr === pr).map(([id, c]) => ({ id, body: c.body })),
        );
      if (method === 'POST') {
        const id = nextId++;
        s.comments.set(id, { repo: fullName, pr, body: String(body.body) });
        return json(res, 201, { id, body: body.body });
      }
    }
    if (method === 'PATCH' && (m = /^issues\/comments\/(\d+)$/.exec(rest))) {
      const c = s.comments.get(Number(m[1]));
      if (!c || c.repo !== fullName) return json(res, 404, { message: 'Not Found' });
      c.body = String(body.body);
      return json(res, 200, { id: Number(m[1]), body: c.body });
    }
    json(res, 404, { message: 'Not Found' });
  }
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  s.url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return s;
}
