import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../schemas/api/client.ts';
import { ROUTES, type RouteId } from '../schemas/api/route-table.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../test/support/accounts.ts';

/** Issue 39 §3: the API serves exactly the route table; §5: an unknown query parameter is a 400, not a silent default. */
let t: Awaited<ReturnType<typeof buildTestApi>>;
beforeAll(async () => {
  t = await buildTestApi();
});
afterAll(async () => t?.close());

describe('the route table', () => {
  it('every route in the table is registered with its method', () => {
    // The router ignores a trailing slash (app.ts), and so stores the path without it.
    const registered = (id: RouteId) => t.app.hasRoute({ method: ROUTES[id].method, url: ROUTES[id].path.replace(/(.)\/$/, '$1') });
    const missing = (Object.keys(ROUTES) as RouteId[]).filter((id) => !registered(id));
    expect(missing).toEqual([]);
  });

  it('every route the OpenAPI document lists is in the table', () => {
    const doc = t.app.swagger() as { paths: Record<string, Record<string, unknown>> };
    const table = new Set(Object.values(ROUTES).map((r) => `${r.method} ${r.path}`));
    const unlisted = Object.entries(doc.paths)
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path.replace(/\{(\w+)\}/g, ':$1')}`))
      .filter((route) => !table.has(route));
    expect(unlisted).toEqual([]);
  });

  it('refuses an unknown query parameter with invalid_request naming it', async () => {
    const user = await signUpAndSignIn(t.app, t.platform);
    const project = await createProject(t.app, user.cookie);
    const res = await t.app.inject({
      method: 'GET',
      url: routePath('listWebhookEndpoints', { slug: project.slug }, { definitelyNotAParameter: '1' }),
      headers: sessionHeaders(user.cookie),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
    expect(JSON.stringify(res.json())).toContain('definitelyNotAParameter');
  });
});
