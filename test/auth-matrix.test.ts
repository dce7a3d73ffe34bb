import { afterAll, describe, expect, it } from 'vitest';
import type { FastifyPluginAsync } from 'fastify';
import { ALL_SCOPES, type Scope } from '../schemas/scopes.ts';
import { newId, newToken } from '../platform/tokens.ts';
import { usersRepository } from '../api/accounts/users-repository.ts';
import { projectsRepository } from '../api/projects/projects-repository.ts';
import { cliRepository } from '../api/cli/cli-repository.ts';
import { keysRepository } from '../api/keys/keys-repository.ts';
import { PROJECT_NOT_FOUND, type DeclaredRoute } from '../api/auth/auth-plugin.ts';
import type { RouteAuth } from '../api/auth/route-auth.ts';
import { buildTestApi } from './support/accounts.ts';

/**
 * Walks every route the app has (ours and every family plugged in through `plugins`) with every
 * kind of credential, and checks allow or deny against the route's own declaration. Routes added
 * later are covered without touching this file, as long as they are registered here.
 *
 * "Denied" means an auth answer (401 unauthorized, 403 forbidden/session_required/
 * insufficient_scope, or 404 "project not found" for a project the credential cannot reach);
 * "allowed" means anything else (the handler ran; it may still say 400 or 404 for a dummy id).
 */
type Kind = 'none' | 'session' | 'cli' | 'key_scoped' | 'key_wrong_scope' | 'key_other_project' | 'key_revoked' | 'malformed' | 'ingest';
const KINDS: Kind[] = ['none', 'session', 'cli', 'key_scoped', 'key_wrong_scope', 'key_other_project', 'key_revoked', 'malformed', 'ingest'];

function expected(route: DeclaredRoute, kind: Kind): { allow: true } | { allow: false; status: number; codes: string[] } {
  const a: RouteAuth = route.auth;
  const cliFamily = route.url.startsWith('/v1/cli');
  const sessionOnly = !!a.session && !a.cli && !a.keyScope;
  const hasSlug = route.url.includes(':slug');
  if (a.public) return { allow: true };
  switch (kind) {
    case 'none':
    case 'key_revoked':
    case 'malformed':
      return { allow: false, status: 401, codes: ['unauthorized'] };
    case 'ingest':
      return { allow: false, status: 403, codes: ['forbidden'] };
    case 'session':
      return a.session ? { allow: true } : { allow: false, status: 403, codes: ['forbidden'] };
    case 'cli':
      return a.cli ? { allow: true } : { allow: false, status: 403, codes: [sessionOnly ? 'session_required' : 'forbidden'] };
    case 'key_scoped':
    case 'key_wrong_scope':
    case 'key_other_project':
      if (cliFamily) return { allow: false, status: 403, codes: ['forbidden'] };
      if (a.anyKey) return { allow: true };
      if (!a.keyScope) return { allow: false, status: 403, codes: [sessionOnly ? 'session_required' : 'forbidden'] };
      if (kind === 'key_wrong_scope') return { allow: false, status: 403, codes: ['insufficient_scope'] };
      if (kind === 'key_other_project' && hasSlug) return { allow: false, status: 404, codes: ['not_found'] };
      return { allow: true };
  }
}

// Built while collecting, so that each route becomes its own test case.
const t = await buildTestApi({ processors: true });
const owner = await usersRepository.createUser(t.platform.db, { email: `matrix-${newId('')}@example.test`, password: 'matrix-password-1' });
afterAll(async () => t.close());

/** Fresh credentials per route, so a destructive route (sign-out, revoke) cannot spoil the next. */
async function credentialsFor(route: DeclaredRoute) {
  const { platform } = t;
  const now = platform.clock.now();
  const newProject = async () =>
    (await platform.db.transaction((tx) => projectsRepository.insertProject(tx, { ownerId: owner.id, name: 'matrix' }, `m-${newId('').slice(0, 16)}`)))!;
  const project = await newProject();
  const other = await newProject();
  const scope = route.auth.keyScope ?? 'project:read';
  const wrong = ALL_SCOPES.filter((s: Scope) => s !== scope);
  const session = await usersRepository.createSession(platform.db, owner.id, now);
  const cli = await cliRepository.createToken(platform.db, owner.id, 'matrix', now);
  const scoped = await keysRepository.createKey(platform.db, { projectId: project.id, kind: 'live', scopes: [scope], now });
  const wrongScope = await keysRepository.createKey(platform.db, { projectId: project.id, kind: 'test', scopes: wrong, now });
  const otherKey = await keysRepository.createKey(platform.db, { projectId: other.id, kind: 'live', scopes: [...ALL_SCOPES], now });
  const revoked = await keysRepository.createKey(platform.db, { projectId: project.id, kind: 'live', scopes: [...ALL_SCOPES], now });
  await platform.db.query('UPDATE api_keys SET revoked_at = now() WHERE id = $1', [revoked.id]);
  const ingest = await keysRepository.createKey(platform.db, { projectId: project.id, kind: 'ingest', now });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  const headers: Record<Kind, Record<string, string>> = {
    none: {},
    session: { cookie: `cx_session=${session.token}`, 'sec-fetch-site': 'same-origin' },
    cli: bearer(cli.token),
    key_scoped: bearer(scoped.token),
    key_wrong_scope: bearer(wrongScope.token),
    key_other_project: bearer(otherKey.token),
    key_revoked: bearer(revoked.token),
    malformed: bearer(`${newToken('cx_live_').slice(0, 20)}!!`),
    ingest: bearer(ingest.token),
  };
  return { slug: project.slug, headers };
}

describe('auth matrix', () => {
  it('has routes to walk, including every family plugged in', () => {
    expect(t.app.declaredRoutes.length).toBeGreaterThanOrEqual(18);
  });

  for (const route of t.app.declaredRoutes)
    it(`${route.method} ${route.url} allows or denies each credential kind as it declares`, async () => {
      const failures: string[] = [];
      {
        const creds = await credentialsFor(route);
        const url = route.url.replace(':slug', creds.slug).replace(/:([A-Za-z]+)/g, (_m, p: string) => `x_${p}_missing`);
        for (const kind of KINDS) {
          const hasBody = ['POST', 'PUT', 'PATCH'].includes(route.method);
          const res = await t.app.inject({ method: route.method as 'GET', url, headers: creds.headers[kind], ...(hasBody ? { payload: {} } : {}) });
          const body = (() => {
            try {
              return res.json();
            } catch {
              return {};
            }
          })();
          const exp = expected(route, kind);
          // 401 invalid_signature is a provider's own authentication failing (§5.2 rule 6), not a credential of ours refused.
          const authDenial =
            (res.statusCode === 401 && body.error !== 'invalid_signature') ||
            (res.statusCode === 403 && ['forbidden', 'session_required', 'insufficient_scope', 'cross_site_request'].includes(body.error)) ||
            (res.statusCode === 404 && body.message === PROJECT_NOT_FOUND);
          const where = `${route.method} ${route.url} as ${kind}: got ${res.statusCode} ${res.body.slice(0, 160)}`;
          if (exp.allow) {
            if (authDenial) failures.push(`${where} (expected allowed)`);
            // A provider integration the operator did not configure answers 503 <provider>_not_configured: a setting, not a fault.
            if (res.statusCode >= 500 && !(res.statusCode === 503 && /_not_configured$/.test(String(body.error)))) failures.push(`${where} (5xx)`);
          } else if (res.statusCode !== exp.status || !exp.codes.includes(body.error)) {
            failures.push(`${where} (expected ${exp.status} ${exp.codes.join('|')})`);
          }
          if (kind === 'ingest' && !exp.allow) expect(body.message).toMatch(/ingest/);
        }
      }
      expect(failures).toEqual([]);
    });

  it('a route without an auth declaration fails at start-up', async () => {
    const noAuth: FastifyPluginAsync = async (app) => {
      app.get('/v1/undeclared', async () => ({ ok: true }));
    };
    const { buildApiApp } = await import('../api/app.ts');
    await expect(buildApiApp(t.platform, { plugins: [noAuth] })).rejects.toThrow(/declares no config.auth/);
  });
});
