import type { FastifyInstance } from 'fastify';
import { randomBytes, randomInt } from 'node:crypto';
import type { Platform } from '../../platform/platform.ts';
import { usersRepository } from '../../api/accounts/users-repository.ts';
import { SESSION_COOKIE } from '../../api/auth/credentials.ts';
import type { Scope } from '../../schemas/scopes.ts';
import type { Project } from '../../schemas/api/projects.ts';
import { buildApiApp } from '../../api/app.ts';
import { prebuiltDeployer } from '../../builder/prebuilt-deploy.ts';
import type { FastifyPluginAsync } from 'fastify';
import { createTestPlatform, type TestPlatformOptions } from './platform.ts';
import type { Builder, StartBuilderOptions } from '../../builder/deploy-builder.ts';

/**
 * Account helpers for API tests: a fresh user with a console session, a project, keys and a CLI
 * token, all made through the real routes (except the user row: there is no public sign-up).
 * Every call uses fresh names, so tests never collide. `cookie` is a ready `Cookie` header value.
 */
export interface SignedInUser {
  cookie: string;
  userId: string;
  email: string;
  password: string;
}

const unique = () => randomBytes(5).toString('hex');

function expectStatus(res: { statusCode: number; body: string }, status: number, what: string): void {
  if (res.statusCode !== status) throw new Error(`${what}: expected ${status}, got ${res.statusCode} ${res.body}`);
}

/** Headers for a cookie-authenticated request (same-origin, as the console sends them). */
export function sessionHeaders(cookie: string): Record<string, string> {
  return { cookie, 'sec-fetch-site': 'same-origin' };
}

export function bearer(token: string): Record<string, string> {
  return { authorization: `Bearer ${token}` };
}

export async function signUpAndSignIn(app: FastifyInstance, platform: Platform, opts: { email?: string; password?: string } = {}): Promise<SignedInUser> {
  const email = opts.email ?? `user-${unique()}@example.test`;
  const password = opts.password ?? `pw-${unique()}-${unique()}`;
  const user = await usersRepository.createUser(platform.db, { email, password });
  const res = await app.inject({ method: 'POST', url: '/v1/auth/sign-in', payload: { email, password } });
  expectStatus(res, 200, 'sign-in');
  const set = res.cookies.find((c) => c.name === SESSION_COOKIE);
  if (!set) throw new Error('sign-in set no session cookie');
  return { cookie: `${SESSION_COOKIE}=${set.value}`, userId: user.id, email, password };
}

export async function createProject(
  app: FastifyInstance,
  cookie: string,
  opts: { slug?: string; name?: string; defaultBranch?: string; environmentHosts?: { production?: string[]; preview?: string[] } } = {},
): Promise<Project> {
  const slug = opts.slug ?? `p-${unique()}`;
  const res = await app.inject({
    method: 'POST',
    url: '/v1/projects',
    headers: sessionHeaders(cookie),
    payload: {
      name: opts.name ?? `Project ${slug}`,
      slug,
      defaultBranch: opts.defaultBranch,
      environmentHosts: opts.environmentHosts && { production: opts.environmentHosts.production ?? [], preview: opts.environmentHosts.preview ?? [] },
    },
  });
  expectStatus(res, 201, 'create project');
  return res.json().project as Project;
}

export async function createKey(
  app: FastifyInstance,
  cookie: string,
  slug: string,
  opts: { kind: 'live' | 'test' | 'ingest'; scopes?: Scope[]; name?: string },
): Promise<{ id: string; token: string }> {
  const payload = opts.kind === 'ingest' ? { kind: 'ingest', name: opts.name } : { kind: opts.kind, name: opts.name, scopes: opts.scopes ?? ['project:read'] };
  const res = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/keys`, headers: sessionHeaders(cookie), payload });
  expectStatus(res, 201, 'create key');
  const { key } = res.json();
  return { id: key.id, token: key.token };
}

/** A `cx_cli_` token through the device login: start, approve with the session, poll. */
export async function createCliToken(app: FastifyInstance, cookie: string): Promise<{ id: string; token: string }> {
  // Each login from an address of its own: starts are limited per caller IP.
  const start = await app.inject({
    method: 'POST',
    url: '/v1/cli/device',
    payload: {},
    remoteAddress: `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`,
  });
  expectStatus(start, 200, 'cli device start');
  const { device_code, user_code } = start.json();
  const approve = await app.inject({ method: 'POST', url: '/v1/cli/device/approve', headers: sessionHeaders(cookie), payload: { user_code } });
  expectStatus(approve, 200, 'cli device approve');
  const poll = await app.inject({ method: 'POST', url: '/v1/cli/device/token', payload: { device_code } });
  expectStatus(poll, 200, 'cli device token');
  const body = poll.json();
  return { id: body.token_id, token: body.access_token };
}

/**
 * A test platform and the API app on it, with `plugins` registered like the composition root does.
 * `processors: true` also starts the error pipeline, the webhook dispatcher, a builder and the inbound pipeline, as the single
 * process does, so routes that publish to the in-process bus have consumers.
 */
export async function buildTestApi(
  opts: TestPlatformOptions & {
    plugins?: FastifyPluginAsync[];
    processors?: boolean;
    builder?: Pick<StartBuilderOptions, 'bwrap' | 'cgroupHost'>;
  } = {},
) {
  const platform = await createTestPlatform(opts);
  const stops: Array<() => Promise<void>> = [];
  let builder: Builder | undefined;
  if (opts.processors) {
    const { startErrorConsumer } = await import('../../processor/errors/error-consumer.ts');
    const { startWebhookDispatcher } = await import('../../processor/webhooks/webhook-dispatcher.ts');
    const { startBuilder } = await import('../../builder/deploy-builder.ts');
    const errors = await startErrorConsumer(platform);
    const webhooks = await startWebhookDispatcher(platform);
    const started = await startBuilder(platform, opts.builder);
    builder = started;
    const { startInboundConsumer } = await import('../../processor/inbound/inbound-consumer.ts');
    const inbound = await startInboundConsumer(platform);
    stops.push(
      () => errors.stop(),
      () => webhooks.stop(),
      () => started.stop(),
      () => inbound.stop(),
    );
  }
  const app = await buildApiApp(platform, { plugins: opts.plugins, deployPrebuilt: prebuiltDeployer(platform) });
  return {
    app,
    platform,
    /** With `processors`: the builder, for its totals. */
    builder,
    async close() {
      await app.close();
      for (const stop of stops) await stop();
      await platform.close();
    },
  };
}
