import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, RouteHandlerMethod } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import type { Credential } from '../auth/route-auth.ts';
import type { SymbolicatedFrame } from '../../schemas/api/errors.ts';
import { UNRESOLVED_REASON_TEXT } from '../../schemas/frame-resolution-text.ts';
import type { ErrorBody } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { credentialMayCall } from '../auth/auth-plugin.ts';
import { ROUTES, type RouteId } from '../../schemas/api/route-table.ts';
import { createApiClient } from '../../schemas/api/client.ts';
import { declared } from '../declared-route.ts';
import { projectsRepository } from '../projects/projects-repository.ts';
import { INTERNAL_CALL_HEADER, INTERNAL_CALL_SECRET } from '../auth/internal-calls.ts';

/**
 * `/v1/mcp` (spec §4.1, §5.1, §5.2 rule 2; issue 27): the MCP endpoint, Streamable HTTP through the official SDK's
 * transport, stateless (any node serves any request) with JSON answers. Top to bottom per request:
 *   1. host      the Host must be the service's own (PUBLIC_BASE_URL) or a loopback literal: DNS rebinding refused (403)
 *   2. who       a `cx_cli_` token (every tool) or a `cx_live_`/`cx_test_` key (its own project's tools within its
 *                scopes; never create_project: tools/list shows a credential only the tools it can use); none or a bad one: 401 with `WWW-Authenticate` naming the protected-resource
 *                metadata (`/.well-known/oauth-protected-resource/v1/mcp`)
 *   3. tools     each one calls the public route it names, with the caller's own credential (so scopes, limits and
 *                errors are the API's), and answers text a model can act on, with next steps
 * A `cxm_` token minted through OAuth (api/oauth/) reaches what a CLI token does, and only through this endpoint.
 */
const TEXT = (text: string, isError = false) => ({ content: [{ type: 'text' as const, text }], ...(isError ? { isError: true } : {}) });
const LOOPBACK_HOST = /^(localhost|127\.0\.0\.1|\[::1\])(:\d+)?$/i;

interface Caller {
  credential: Credential;
  authorization: string;
  /** A key's own project. */
  keyProject?: string;
  /** Whether the credential passes a route's declaration: a tool is listed only when it may call each route it uses. */
  mayCall: (id: RouteId) => boolean;
}

type Inject = (method: string, url: string, body?: unknown) => Promise<{ status: number; body: unknown }>;

const RANGE_MS = { '24h': 24 * 3_600_000, '7d': 7 * 24 * 3_600_000, '30d': 30 * 24 * 3_600_000 } as const;

function buildServer(caller: Caller, call: Inject, now: () => number): McpServer {
  const server = new McpServer(
    { name: 'service', version: '0.1.0' },
    { instructions: 'Projects, error issues, deploys, analytics and feature flags of the hosting service.' },
  );
  const isKey = caller.credential.kind === 'project_key';
  const project = z.string().min(1).max(100).describe("the project's slug").optional();
  const slugOf = (p?: string) => {
    const s = p ?? caller.keyProject;
    if (!s) throw new ToolError('invalid_request', 'name the project: pass `project` (its slug; list_projects shows them)');
    return s;
  };
  // The typed client over the caller's own inject: a refusal becomes the tool's error, in the API's words.
  const api = createApiClient(async (method, path, body) => {
    const r = await call(method, path, body);
    const e = (r.body ?? {}) as Partial<ErrorBody>;
    if (r.status >= 400) throw new ToolError(e.error ?? `http_${r.status}`, e.message ?? `HTTP ${r.status}`);
    return r.body;
  });
  /**
   * A tool, listed only when the caller may call every route it uses (§5.2 rule 2: a key is never offered
   * create_project, nor a tool its scopes refuse): an agent shown a tool tries it.
   */
  const tool = <S extends z.ZodRawShape>(
    name: string,
    description: string,
    shape: S,
    routes: RouteId[],
    run: (args: z.infer<z.ZodObject<S>>) => Promise<string>,
  ) => {
    if (!routes.every(caller.mayCall)) return;
    // biome-ignore lint/suspicious/noExplicitAny: the SDK's callback type is generic over the shape; the args are checked by it
    (server.registerTool as any)(name, { description, inputSchema: shape }, async (args: any) => {
      try {
        return TEXT(await run(args));
      } catch (err) {
        if (err instanceof ToolError) return TEXT(`${err.code}: ${err.message}`, true);
        throw err;
      }
    });
  };

  tool('list_projects', 'The projects this credential reaches, with their slugs.', {}, isKey ? [] : ['listProjects'], async () => {
    if (isKey) return `This API key reaches one project: ${caller.keyProject}.`;
    const r = await api.call('listProjects');
    if (!r.projects.length) return 'No projects yet. Next: create_project with a name.';
    return `${r.projects.map((p) => `- ${p.slug}: ${p.name} (default branch ${p.defaultBranch})`).join('\n')}\n\nNext: list_issues or list_deploys with project=<slug>.`;
  });
  tool('create_project', 'Create a project.', { name: z.string().min(1).max(100), slug: z.string().max(100).optional() }, ['createProject'], async (a) => {
    const r = await api.call('createProject', { body: { name: a.name, ...(a.slug ? { slug: a.slug } : {}) } });
    return `Created ${r.project.slug}. Next: create an ingest key in the console, or trigger_deploy once a repository is set.`;
  });
  tool(
    'list_issues',
    'Error issues of a project, most frequent first.',
    { project, status: z.enum(['unresolved', 'resolved', 'ignored']).optional(), environment: z.enum(['production', 'preview', 'unknown']).optional() },
    ['listIssues'],
    async (a) => {
      const query = { status: a.status ?? 'unresolved', limit: 25, environment: a.environment };
      const r = await api.call('listIssues', { params: { slug: slugOf(a.project) }, query });
      if (!r.data.length) return `No ${a.status ?? 'unresolved'} issues.`;
      return `${r.data.map((i) => `- ${i.groupId}: ${i.name}: ${i.message} (${i.count} events, last ${i.lastSeen}, ${i.status})`).join('\n')}\n\nNext: get_issue with groupId for the stack and samples; update_issue to resolve or ignore.`;
    },
  );
  tool(
    'get_issue',
    'One issue: the stack, where in your code, samples and the suggestion.',
    { project, groupId: z.string().min(1).max(64) },
    ['getIssue'],
    async (a) => {
      const r = await api.call('getIssue', { params: { slug: slugOf(a.project), groupId: a.groupId } });
      const i = r.issue;
      return [
        `${i.name}: ${i.message}`,
        `status ${i.status}, ${i.count} events, first ${i.firstSeen}, last ${i.lastSeen}`,
        i.culprit ? `In your code: ${i.culprit}` : undefined,
        '',
        i.stack,
        ...(i.frames ? frameNotes(i.frames) : []),
        i.suggestion ? `\nSuggestion: ${i.suggestion}` : undefined,
        `\nNext: fix the code at the culprit, then update_issue with action=resolve.`,
      ]
        .filter((l) => l !== undefined)
        .join('\n');
    },
  );
  tool(
    'update_issue',
    'Resolve, ignore or reopen issues; resolve with inNextDeploy=true resolves them once a newer production deploy goes live; ignore with one of ignoreCount, ignoreUserCount, ignoreDuration (minutes), ignoreUntilEscalating ignores them until then (Sentry’s conditions), else forever.',
    {
      project,
      groupIds: z.array(z.string().min(1).max(64)).min(1).max(100),
      action: z.enum(['resolve', 'ignore', 'reopen']),
      inNextDeploy: z.boolean().optional(),
      ignoreCount: z.number().int().min(1).max(1_000_000).optional(),
      ignoreUserCount: z.number().int().min(1).max(1_000_000).optional(),
      ignoreDuration: z.number().int().min(1).max(525_600).optional(),
      ignoreUntilEscalating: z.literal(true).optional(),
    },
    ['bulkIssues', 'ignoreIssue'],
    async (a) => {
      // Ignore until (issue 41): each issue through its own route, which takes the condition (and refuses two).
      const until = {
        ...(a.ignoreCount !== undefined ? { ignoreCount: a.ignoreCount } : {}),
        ...(a.ignoreUserCount !== undefined ? { ignoreUserCount: a.ignoreUserCount } : {}),
        ...(a.ignoreDuration !== undefined ? { ignoreDuration: a.ignoreDuration } : {}),
        ...(a.ignoreUntilEscalating ? { ignoreUntilEscalating: true as const } : {}),
      };
      if (a.action === 'ignore' && Object.keys(until).length) {
        const done: string[] = [];
        for (const groupId of new Set(a.groupIds)) {
          const r = await api.call('ignoreIssue', { params: { slug: slugOf(a.project), groupId }, body: until });
          done.push(`${r.issue.groupId} ${r.issue.status} until ${r.issue.ignoreUntil?.condition ?? 'forever'}`);
        }
        return `${done.length} issue(s) now ${done.join(', ')}.`;
      }
      const body = { action: a.action, groupIds: a.groupIds, ...(a.inNextDeploy && a.action === 'resolve' ? { inNextDeploy: true as const } : {}) };
      const r = await api.call('bulkIssues', { params: { slug: slugOf(a.project) }, body });
      return `${r.updated.length} issue(s) now ${r.updated.map((i) => `${i.groupId} ${i.status}`).join(', ')}.`;
    },
  );
  tool(
    'merge_issues',
    "Merge issues into one (Sentry's merge): it takes their counts, and their later events land in it.",
    { project, groupId: z.string().min(1).max(64), groupIds: z.array(z.string().min(1).max(64)).min(1).max(50) },
    ['mergeIssues'],
    async (a) => {
      const r = await api.call('mergeIssues', { params: { slug: slugOf(a.project), groupId: a.groupId }, body: { groupIds: a.groupIds } });
      return `${a.groupIds.length} issue(s) merged into ${r.issue.groupId} (${r.issue.count} events).`;
    },
  );
  tool('list_deploys', 'The newest deploys of a project.', { project }, ['listDeploys'], async (a) => {
    const r = await api.call('listDeploys', { params: { slug: slugOf(a.project) } });
    if (!r.data.length) return 'No deploys yet. Next: trigger_deploy.';
    return `${r.data.map((d) => `- ${d.id}: ${d.status} ${d.environment} ${d.branch}${d.failureReason ? ` (${d.failureReason})` : ''}`).join('\n')}\n\nNext: get_deploy_log with deployId.`;
  });
  tool(
    'get_deploy_log',
    "A deploy's build log (up to 500 lines from `from`).",
    { project, deployId: z.string().min(1).max(64), from: z.number().int().min(0).optional() },
    ['getDeployLogs'],
    async (a) => {
      const r = await api.call('getDeployLogs', { params: { slug: slugOf(a.project), deployId: a.deployId }, query: { from: a.from ?? 0 } });
      const lines = r.lines.map((l) => `[${l.stream}] ${l.line}`).join('\n');
      return `${lines || '(no lines yet)'}\n\nstatus ${r.status}${r.done ? '' : `; more from=${r.nextSeq}`}`;
    },
  );
  tool(
    'trigger_deploy',
    'Queue a deploy of a branch (the default branch if none).',
    { project, branch: z.string().min(1).max(255).optional() },
    ['queueDeploy'],
    async (a) => {
      const r = await api.call('queueDeploy', { params: { slug: slugOf(a.project) }, body: a.branch ? { branch: a.branch } : {} });
      return `${r.deduplicated ? 'Already queued' : 'Queued'} ${r.deploy.id} (${r.deploy.environment}, ${r.deploy.branch}). Next: get_deploy_log with deployId=${r.deploy.id}.`;
    },
  );
  tool(
    'rollback_deploy',
    'Serve an earlier ready production deploy again.',
    { project, deployId: z.string().min(1).max(64) },
    ['rollbackDeploy'],
    async (a) => {
      await api.call('rollbackDeploy', { params: { slug: slugOf(a.project), deployId: a.deployId } });
      return `${a.deployId} is live again.`;
    },
  );
  tool(
    'query_analytics',
    'Analytics: the top events, or one event trend, over the last day, week or month.',
    { project, kind: z.enum(['top_events', 'trends']), event: z.string().max(200).optional(), range: z.enum(['24h', '7d', '30d']).optional() },
    ['analyticsTopEvents', 'analyticsTrends'],
    async (a) => {
      // The analytics routes take a time range as `from` and `to` (they read no `range`, and used to answer 7 days for
      // any): the last day, week or month up to now.
      const to = now();
      const from = to - RANGE_MS[a.range ?? '7d'];
      const args = { params: { slug: slugOf(a.project) }, query: { from, to, event: a.event } };
      const r = a.kind === 'top_events' ? await api.call('analyticsTopEvents', args) : await api.call('analyticsTrends', args);
      return JSON.stringify(r, null, 1).slice(0, 20_000);
    },
  );
  tool('list_flags', 'Feature flags of a project.', { project }, ['listFlags'], async (a) => {
    const r = await api.call('listFlags', { params: { slug: slugOf(a.project) } });
    if (!r.data.length) return 'No flags. Next: set_flag with a key to create one.';
    return r.data.map((f) => `- ${f.key}: ${f.enabled ? 'on' : 'off'}, ${f.rolloutPercentage}%${f.description ? ` (${f.description})` : ''}`).join('\n');
  });
  tool(
    'set_flag',
    'Turn a feature flag on or off, or change its rollout (created when it does not exist).',
    { project, key: z.string().min(1).max(100), enabled: z.boolean().optional(), rolloutPercentage: z.number().int().min(0).max(100).optional() },
    ['getFlag', 'createFlag', 'updateFlag'],
    async (a) => {
      const slug = slugOf(a.project);
      const patch = {
        ...(a.enabled === undefined ? {} : { enabled: a.enabled }),
        ...(a.rolloutPercentage === undefined ? {} : { rolloutPercentage: a.rolloutPercentage }),
      };
      const params = { slug, key: a.key };
      const exists = await api.call('getFlag', { params }).then(
        () => true,
        (err: unknown) => {
          if (err instanceof ToolError && err.code === 'not_found') return false;
          throw err;
        },
      );
      const r = exists
        ? await api.call('updateFlag', { params, body: patch })
        : await api.call('createFlag', { params: { slug }, body: { key: a.key, enabled: a.enabled ?? false, rolloutPercentage: a.rolloutPercentage ?? 100 } });
      return `${r.flag.key} is ${r.flag.enabled ? 'on' : 'off'} at ${r.flag.rolloutPercentage}%.`;
    },
  );
  return server;
}

/**
 * What a model needs beside the stack (which is already the original one when source maps resolved it): the source
 * around the top in-app frame, the failing line marked, and how many frames stayed minified and why.
 */
function frameNotes(frames: SymbolicatedFrame[]): string[] {
  const notes: string[] = [];
  const top = frames.find((f) => f.inApp && f.original && f.context);
  if (top?.original && top.context) {
    const { firstLine, lines, errorIndex } = top.context;
    const width = String(firstLine + lines.length - 1).length;
    notes.push('', `Source at ${top.original.file}:${top.original.line ?? '?'} (from its source map):`);
    lines.forEach((text, k) => notes.push(`${k === errorIndex ? '>' : ' '} ${String(firstLine + k).padStart(width)} | ${text}`));
  }
  const unresolved = new Map<string, number>();
  for (const f of frames) {
    if (f.resolution.status === 'unresolved') {
      const why = UNRESOLVED_REASON_TEXT[f.resolution.reason];
      unresolved.set(why, (unresolved.get(why) ?? 0) + 1);
    }
  }
  const count = [...unresolved.values()].reduce((a, b) => a + b, 0);
  if (count)
    notes.push(
      '',
      `${count} ${count === 1 ? 'frame kept its' : 'frames kept their'} minified form: ${[...unresolved].map(([why, n]) => `${why} (${n})`).join('; ')}.`,
    );
  return notes;
}

class ToolError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function mcpRoutes(platform: Pick<Platform, 'db' | 'clock' | 'config'>, root: () => FastifyInstance): FastifyPluginAsyncZod {
  const base = publicBaseUrl(platform.config);
  const ownHost = new URL(base).host.toLowerCase();
  const metadata = `${base}${ROUTES.mcpResourceMetadata.path}`;
  const endpoint = ROUTES.mcpPost.path;
  return async (app) => {
    // Every 401 of this endpoint names where to learn how to get a token (MCP authorization, RFC 9728).
    app.addHook('onSend', async (request, reply, payload) => {
      if (reply.statusCode === 401 && request.url.startsWith(endpoint)) reply.header('www-authenticate', `Bearer resource_metadata="${metadata}"`);
      return payload;
    });
    app.route({
      ...declared('mcpResourceMetadata'),
      config: { auth: AUTH.public },
      handler: async () => ({
        resource: `${base}${endpoint}`,
        authorization_servers: [base],
        bearer_methods_supported: ['header'],
        resource_name: 'Service MCP',
      }),
    });

    const handler: RouteHandlerMethod = async (request, reply) => {
      // 1. host
      const host = String(request.headers.host ?? '').toLowerCase();
      if (host !== ownHost && !LOOPBACK_HOST.test(host)) return reply.code(403).send({ error: 'forbidden', message: 'this Host is not the service' });
      // 2. who: the auth hook took the credential (a 401 carries the challenge, below)
      if (request.method !== 'POST') return reply.code(405).header('allow', 'POST').send({ error: 'method_not_allowed', message: 'stateless: POST only' });
      const credential = request.credential!;
      const keyProject = credential.kind === 'project_key' ? (await projectsRepository.getProject(platform.db, credential.projectId))?.slug : undefined;
      const authorization = String(request.headers.authorization);
      const inject: Inject = async (method, url, body) => {
        const res = await root().inject({
          method: method as 'GET',
          url,
          headers: { authorization, [INTERNAL_CALL_HEADER]: INTERNAL_CALL_SECRET, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          payload: body === undefined ? undefined : JSON.stringify(body),
          remoteAddress: request.ip,
        });
        let json: unknown = null;
        try {
          json = res.body ? JSON.parse(res.body) : null;
        } catch {
          json = null;
        }
        return { status: res.statusCode, body: json };
      };
      // 3. tools, one server and transport per request (stateless)
      const routes = root().declaredRoutes;
      const mayCall = (id: RouteId) => {
        const { method, path } = ROUTES[id];
        const route = routes.find((r) => r.method === method && r.url === path);
        return route !== undefined && credentialMayCall(route.auth, credential, path);
      };
      const server = buildServer({ credential, authorization, keyProject, mayCall }, inject, () => platform.clock.now());
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        enableJsonResponse: true,
        enableDnsRebindingProtection: true,
        allowedHosts: [host],
      });
      reply.hijack();
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    };
    for (const id of ['mcpPost', 'mcpGet', 'mcpDelete'] as const) app.route({ ...declared(id), config: { auth: { cli: true, anyKey: true } }, handler });
  };
}
