import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceMapsRepository } from '../../domain/source-maps/source-maps-repository.ts';
import { bearer, buildTestApi, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { DEFAULT_MAPS, seedDeployWithMaps } from '../../test/support/symbolicated-issue.ts';

/**
 * `GET /v1/projects/:slug/deploys/:deployId/sourcemaps` (issue 37): a deploy's kept maps by name, served path, debug id
 * and size, never their content; `deploys:read` or a session; another project's deploy is not found.
 */
describe('a deploy page lists its source maps', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let cookie: string;
  beforeAll(async () => {
    t = await buildTestApi();
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => t?.close());

  const list = (slug: string, deployId: string, headers: Record<string, string> = sessionHeaders(cookie)) =>
    t.app.inject({ method: 'GET', url: `/v1/projects/${slug}/deploys/${deployId}/sourcemaps`, headers });

  it('lists names, served paths, debug ids and sizes by map name, and never the content', async () => {
    const p = await createProject(t.app, cookie);
    const deployId = await seedDeployWithMaps(t.platform.db, p.id);
    const secret = Buffer.from(
      JSON.stringify({ version: 3, sources: ['src/secret.ts'], sourcesContent: ['const apiKey = "TENANT_SOURCE_TEXT";'], mappings: '' }),
    );
    await sourceMapsRepository.insert(t.platform.db, { projectId: p.id, deployId }, [{ mapName: 'assets/admin-aa11bb22.js.map', content: secret }]);
    const res = await list(p.slug, deployId);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({
      maps: [
        { mapName: 'assets/admin-aa11bb22.js.map', servedPath: null, debugId: null, size: secret.length },
        ...[...DEFAULT_MAPS]
          .sort((a, b) => a.mapName.localeCompare(b.mapName))
          .map((m) => ({ mapName: m.mapName, servedPath: m.servedPath, debugId: m.debugId ?? null, size: m.bytes })),
      ],
    });
    expect(res.body).not.toContain('TENANT_SOURCE_TEXT');
    expect(res.body).not.toContain('src/secret.ts');
    expect(res.body).not.toContain(secret.toString('base64').slice(0, 40));
  });

  it('a deploy without maps lists none; an unknown deploy is 404', async () => {
    const p = await createProject(t.app, cookie);
    const deployId = await seedDeployWithMaps(t.platform.db, p.id, []);
    expect((await list(p.slug, deployId)).json()).toEqual({ maps: [] });
    const missing = await list(p.slug, 'dep_missing');
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error).toBe('not_found');
  });

  it("answers a key with deploys:read; refuses one without it, and never shows another project's deploy", async () => {
    const mine = await createProject(t.app, cookie);
    const theirs = await createProject(t.app, cookie);
    const myDeploy = await seedDeployWithMaps(t.platform.db, mine.id);
    const theirDeploy = await seedDeployWithMaps(t.platform.db, theirs.id);
    const reader = await createKey(t.app, cookie, mine.slug, { kind: 'live', scopes: ['deploys:read'] });
    const errorsOnly = await createKey(t.app, cookie, mine.slug, { kind: 'live', scopes: ['errors:read'] });
    const theirKey = await createKey(t.app, cookie, theirs.slug, { kind: 'live', scopes: ['deploys:read'] });

    const ok = await list(mine.slug, myDeploy, bearer(reader.token));
    expect(ok.statusCode).toBe(200);
    expect(ok.json().maps).toHaveLength(DEFAULT_MAPS.length);
    expect((await list(mine.slug, myDeploy, bearer(errorsOnly.token))).json().error).toBe('insufficient_scope');
    expect((await list(mine.slug, myDeploy, {})).statusCode).toBe(401);

    // Another project's deploy through my project's slug: not found, with the session and with my key.
    for (const headers of [sessionHeaders(cookie), bearer(reader.token)]) {
      const res = await list(mine.slug, theirDeploy, headers);
      expect(res.statusCode).toBe(404);
      expect(res.body).not.toContain('assets/');
    }
    // Their key on my project is refused before any deploy is looked at.
    expect((await list(mine.slug, myDeploy, bearer(theirKey.token))).statusCode).toBe(404);
  });
});
