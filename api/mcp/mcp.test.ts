import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, buildTestApi, createCliToken, createKey, createProject, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { httpRequest } from '../../test/support/http-request.ts';
import { prng } from '../../test/support/prng.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { TOPIC as DEPLOY_TOPIC } from '../../schemas/bus/deploy-requests.ts';
import { sessionHeaders } from '../../test/support/accounts.ts';

/**
 * `/v1/mcp` (issue 27) through the MCP SDK's own client over real HTTP: a CLI token reaches every tool, a `cx_live_` key
 * only its project's (never create_project), scopes are the API's own, no credential is a 401 naming the
 * protected-resource metadata, a foreign Host is refused, and random JSON-RPC never gets a 5xx.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let owner: SignedInUser;
let slug: string;
let cliToken: string;

beforeAll(async () => {
  const outbound = steerableGuard({ unknownNames: 'fail' });
  outbound.table['github.com'] = ['140.82.112.3']; // the build source is checked, never cloned here (no builder runs)
  t = await buildTestApi({ overrides: { outbound: outbound.guard } });
  // A builder's stand-in takes the wake-ups (the in-process bus hands a message over before publish resolves).
  await t.platform.bus.subscribe(DEPLOY_TOPIC, 'mcp-test-builder-standin', async () => {});
  owner = await signUpAndSignIn(t.app, t.platform);
  slug = (await createProject(t.app, owner.cookie)).slug;
  cliToken = (await createCliToken(t.app, owner.cookie)).token;
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
});

async function connect(token: string): Promise<Client> {
  const client = new Client({ name: 'test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/v1/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}
const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0]!.text;

describe('the MCP endpoint', () => {
  it('refuses a missing or bad credential with 401 naming the protected-resource metadata, and a foreign Host with 403', async () => {
    const none = await fetch(`${base}/v1/mcp`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(none.status).toBe(401);
    const challenge = none.headers.get('www-authenticate')!;
    expect(challenge).toMatch(/^Bearer resource_metadata="(.+)\/\.well-known\/oauth-protected-resource\/v1\/mcp"$/);
    const meta = await (await fetch(`${base}/.well-known/oauth-protected-resource/v1/mcp`)).json();
    expect(meta).toMatchObject({ resource: expect.stringMatching(/\/v1\/mcp$/), bearer_methods_supported: ['header'] });
    expect(
      (await fetch(`${base}/v1/mcp`, { method: 'POST', headers: { authorization: 'Bearer cx_cli_nope', 'content-type': 'application/json' }, body: '{}' }))
        .status,
    ).toBe(401);
    const rebound = await httpRequest(
      base,
      'POST',
      '/v1/mcp',
      { host: 'attacker.example', authorization: `Bearer ${cliToken}`, 'content-type': 'application/json' },
      '{}',
    );
    expect(rebound.status).toBe(403);
  });

  it('a CLI token lists the tools and uses them on the public routes: projects, issues, deploys, flags', async () => {
    const c = await connect(cliToken);
    const tools = (await c.listTools()).tools.map((x) => x.name).sort();
    expect(tools).toEqual(
      [
        'create_project',
        'get_deploy_log',
        'get_issue',
        'list_deploys',
        'list_flags',
        'list_issues',
        'list_projects',
        'merge_issues',
        'query_analytics',
        'rollback_deploy',
        'set_flag',
        'trigger_deploy',
        'update_issue',
      ].sort(),
    );
    expect(text(await c.callTool({ name: 'list_projects', arguments: {} }))).toContain(slug);
    const made = await c.callTool({ name: 'create_project', arguments: { name: 'From MCP' } });
    expect(text(made)).toMatch(/^Created /);
    expect(text(await c.callTool({ name: 'list_issues', arguments: { project: slug } }))).toBe('No unresolved issues.');
    const missing = await c.callTool({ name: 'get_issue', arguments: { project: slug, groupId: 'grp_nope' } });
    expect([missing.isError, text(missing)]).toEqual([true, expect.stringMatching(/^not_found: /)]);
    expect(text(await c.callTool({ name: 'list_deploys', arguments: { project: slug } }))).toMatch(/No deploys yet/);
    expect(text(await c.callTool({ name: 'set_flag', arguments: { project: slug, key: 'new-checkout', enabled: true, rolloutPercentage: 30 } }))).toBe(
      'new-checkout is on at 30%.',
    );
    expect(text(await c.callTool({ name: 'set_flag', arguments: { project: slug, key: 'new-checkout', enabled: false } }))).toBe('new-checkout is off at 30%.');
    expect(text(await c.callTool({ name: 'list_flags', arguments: { project: slug } }))).toContain('- new-checkout: off, 30%');
    await c.close();
  });

  it("deploys, logs, rollbacks, issue updates and analytics through the tools, with the API's own refusals", async () => {
    const c = await connect(cliToken);
    const settings = await t.app.inject({
      method: 'PATCH',
      url: `/v1/projects/${slug}/deploys/settings`,
      headers: sessionHeaders(owner.cookie),
      payload: { repoUrl: 'https://github.com/acme/shop.git', buildCommand: 'true', outputDir: '.' },
    });
    expect(settings.statusCode, settings.body).toBe(200);
    const queued = text(await c.callTool({ name: 'trigger_deploy', arguments: { project: slug, branch: 'feature-x' } }));
    expect(queued).toMatch(/^Queued dep_\w+ \(preview, feature-x\)\. Next: get_deploy_log/);
    const deployId = /dep_\w+/.exec(queued)![0];
    expect(text(await c.callTool({ name: 'get_deploy_log', arguments: { project: slug, deployId } }))).toMatch(/\(no lines yet\)\n\nstatus queued/);
    expect(text(await c.callTool({ name: 'list_deploys', arguments: { project: slug } }))).toContain(`- ${deployId}: queued preview feature-x`);
    const rollback = await c.callTool({ name: 'rollback_deploy', arguments: { project: slug, deployId } });
    expect([rollback.isError, text(rollback)]).toEqual([true, expect.stringMatching(/^[a-z_]+: /)]);
    const update = await c.callTool({ name: 'update_issue', arguments: { project: slug, groupIds: ['grp_nope'], action: 'resolve' } });
    expect(text(update)).toMatch(/not_found|0 issue/);
    // Issue 41: resolve in next deploy and merge go through the same routes and answer their refusals.
    const next = await c.callTool({ name: 'update_issue', arguments: { project: slug, groupIds: ['grp_nope'], action: 'resolve', inNextDeploy: true } });
    expect(text(next)).toBe('0 issue(s) now .');
    // Ignore until (issue 41): the condition goes to the issue's own ignore route.
    const ignore = await c.callTool({ name: 'update_issue', arguments: { project: slug, groupIds: ['grp_nope'], action: 'ignore', ignoreCount: 100 } });
    expect([ignore.isError, text(ignore)]).toEqual([true, expect.stringMatching(/^not_found: /)]);
    const two = await c.callTool({
      name: 'update_issue',
      arguments: { project: slug, groupIds: ['grp_nope'], action: 'ignore', ignoreCount: 1, ignoreDuration: 5 },
    });
    expect([two.isError, text(two)]).toEqual([true, expect.stringMatching(/^invalid_request: /)]);
    const merge = await c.callTool({ name: 'merge_issues', arguments: { project: slug, groupId: 'grp_nope', groupIds: ['grp_other'] } });
    expect([merge.isError, text(merge)]).toEqual([true, expect.stringMatching(/^not_found: /)]);
    const self = await c.callTool({ name: 'merge_issues', arguments: { project: slug, groupId: 'grp_a', groupIds: ['grp_a'] } });
    expect([self.isError, text(self)]).toEqual([true, expect.stringMatching(/^invalid_request: /)]);
    const top = await c.callTool({ name: 'query_analytics', arguments: { project: slug, kind: 'top_events', range: '7d' } });
    expect(top.isError).toBeFalsy();
    // The range asked for is the range answered (the route reads from/to; `range=24h` used to answer 7 days).
    const spanOf = (answer: string) => {
      const r = (JSON.parse(answer) as { range: { from: string; to: string } }).range;
      return Date.parse(r.to) - Date.parse(r.from);
    };
    expect(spanOf(text(top))).toBe(7 * 24 * 3_600_000);
    const day = await c.callTool({ name: 'query_analytics', arguments: { project: slug, kind: 'trends', range: '24h' } });
    expect(spanOf(text(day))).toBe(24 * 3_600_000);
    const bad = await c.callTool({ name: 'list_issues', arguments: { project: slug, status: 'nonsense' } });
    expect(bad.isError).toBe(true);
    await c.close();
  });

  it("a cx_live_ key reaches only its project's tools, within its scopes; never create_project", async () => {
    const key = await createKey(t.app, owner.cookie, slug, { kind: 'live', scopes: ['errors:read', 'flags:read'] });
    const c = await connect(key.token);
    // tools/list offers only what the key can use (issue 39 §5): no create_project, no tool its scopes refuse
    expect((await c.listTools()).tools.map((x) => x.name).sort()).toEqual(['get_issue', 'list_flags', 'list_issues', 'list_projects']);
    expect(text(await c.callTool({ name: 'list_projects', arguments: {} }))).toBe(`This API key reaches one project: ${slug}.`);
    expect(text(await c.callTool({ name: 'list_issues', arguments: {} }))).toBe('No unresolved issues.');
    // a tool not offered is still refused when called by name
    for (const name of ['create_project', 'set_flag', 'list_deploys']) {
      const refused = await c.callTool({ name, arguments: { name: 'nope', key: 'x', enabled: true } }).catch((err: Error) => ({ isError: true, err }));
      expect(refused.isError, name).toBe(true);
    }
    const other = (await createProject(t.app, owner.cookie)).slug;
    expect(text(await c.callTool({ name: 'list_issues', arguments: { project: other } }))).toMatch(/^not_found: /);
    await c.close();
    // A key reaches nothing else through the CLI family either.
    expect((await t.app.inject({ url: '/v1/cli/whoami', headers: bearer(key.token) })).statusCode).toBe(403);
  });

  it('answers random JSON-RPC and bodies below 500, and keeps serving', async () => {
    const rnd = prng(27);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const bodies = () =>
      pick<string>([
        '',
        '{',
        '[]',
        'null',
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: pick(['tools/call', 'tools/list', 'initialize', 'nope', '']),
          params: pick([null, {}, { name: 'list_issues', arguments: { project: 7 } }, { name: 'x'.repeat(5000) }]),
        }),
        JSON.stringify([{ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'set_flag', arguments: { key: {}, enabled: 'yes' } } }]),
        JSON.stringify({ jsonrpc: '1.0', method: 'tools/list' }),
      ]);
    for (let i = 0; i < 150; i++) {
      const res = await httpRequest(
        base,
        pick(['POST', 'POST', 'GET', 'DELETE']),
        '/v1/mcp',
        {
          authorization: `Bearer ${cliToken}`,
          'content-type': pick(['application/json', 'text/plain']),
          accept: pick(['application/json, text/event-stream', 'application/json', '*/*']),
        },
        bodies(),
      );
      expect(res.status, res.body.slice(0, 200)).toBeLessThan(500);
    }
    const c = await connect(cliToken);
    expect(text(await c.callTool({ name: 'list_projects', arguments: {} }))).toContain(slug);
    await c.close();
  });
});
