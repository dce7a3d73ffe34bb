import { execFileSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createPgliteStore } from '../../platform/adapters/relational/pglite-store.ts';
import { verifySignature } from '../../sdk/node/webhook-verifier.ts';
import { eventually } from '../e2e/support/http-client.ts';
import {
  call,
  deployEnded,
  expectCall,
  FIXTURES,
  ROOT,
  signIn,
  siteRepo,
  startServiceProcess,
  webhookReceiver,
  type ServiceProcess,
} from './upgrade-support.ts';

/**
 * Upgrades (issue 36): today's service, started as `npm start` starts it on the data directory a tagged earlier
 * version left (test/upgrade/fixtures/<tag>.tar.xz, made by make-fixture.ts from that tag's own code), runs its
 * migrations forward and keeps every family's data: the owner, the project and its settings, the keys (which still
 * authenticate: an error sent with the old ingest key counts into the old issue), the issues and their states, the
 * deploy, its build log and its site on its hosts, the deploy hook (which still deploys), the webhook endpoint (whose
 * old secret still signs), the analytics events, the flags as the edge evaluates them, the inbox and the alert mail.
 * A second start applies nothing more. The fixture is extracted to a new temporary directory, as a backup restored
 * elsewhere would be: nothing may depend on where the data directory was.
 */
const TAGS = readdirSync(FIXTURES)
  .filter((n) => n.endsWith('.json'))
  .map((n) => n.slice(0, -'.json'.length))
  .sort();
const WAIT_MS = 120_000;

const running: ServiceProcess[] = [];
afterAll(async () => {
  for (const s of running) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});

function migrationFiles(kind: 'relational' | 'analytical'): string[] {
  return readdirSync(path.join(ROOT, 'platform/migrations', kind))
    .filter((n) => /^\d{4}_.+\.sql$/.test(n))
    .map((n) => n.replace(/\.sql$/, ''))
    .sort();
}

/** The versions a start's log says it applied, by kind (nothing logged: nothing applied). */
function appliedAtStart(service: ServiceProcess): { relational: string[]; analytical: string[] } {
  const applied = (msg: string) => service.logs().flatMap((l) => (l.msg === msg ? (l.applied as string[]) : []));
  return { relational: applied('relational migrations applied'), analytical: applied('analytical migrations applied') };
}

describe.each(TAGS)('an upgrade from %s', (tag) => {
  const fx = JSON.parse(readFileSync(path.join(FIXTURES, `${tag}.json`), 'utf8'));
  const slug: string = fx.project.slug;
  const project = `/v1/projects/${slug}`;
  const bearer = { authorization: `Bearer ${fx.keys.api.token}` };
  const ingestHeaders = { authorization: `Bearer ${fx.keys.ingest.token}`, origin: fx.errors.origin };

  it("runs the migrations forward and keeps every family's data; a second start applies nothing", { timeout: 600_000 }, async () => {
    const work = await mkdtemp(path.join(os.tmpdir(), `upgrade-${tag}-`));
    // Sandboxed builds run as an unprivileged user: the new deploy's repository must be readable by it.
    await chmod(work, 0o755);
    const dataDir = path.join(work, 'data');
    await mkdir(dataDir);
    execFileSync('tar', ['-xJf', path.join(FIXTURES, `${tag}.tar.xz`), '-C', dataDir]);
    const env = {
      DATA_DIR: dataDir,
      LOG_LEVEL: 'info',
      SETTINGS_REFRESH_MS: '250',
      ALLOW_LOCAL_REPOS: 'true',
      ALLOW_LOCAL_WEBHOOKS: 'true',
      // The fixture's events keep their time: a later run must not see them aged out by the default retention.
      ANALYTICS_RETENTION_DAYS: '3650',
    };
    const receiver = await webhookReceiver();
    try {
      const first = await startServiceProcess(ROOT, env);
      running.push(first);
      const base = first.base;

      // The migrations the fixture's version did not have ran at this start, and only those.
      const newSince = (kind: 'relational' | 'analytical') => migrationFiles(kind).filter((v) => !fx.migrations[kind].includes(v));
      expect(appliedAtStart(first)).toEqual({ relational: newSince('relational'), analytical: newSince('analytical') });

      // Accounts: the owner signs in with the old password; the project, its environment hosts (`domains` in fixtures
      // made before issue 39) and keys are there.
      const session = await signIn(base, fx.owner);
      const rollup = (await expectCall(base, 200, 'GET', project, bearer)).project;
      expect(rollup).toMatchObject({ id: fx.project.id, name: fx.project.name, environmentHosts: fx.project.environmentHosts ?? fx.project.domains });
      const keys = (await expectCall(base, 200, 'GET', `${project}/keys`, session)).keys;
      for (const k of [fx.keys.ingest, fx.keys.api]) expect(keys).toContainEqual(expect.objectContaining({ id: k.id, name: k.name, revoked: false }));

      // Errors: both issues with their counts and states; the settings.
      expect((await expectCall(base, 200, 'GET', `${project}/errors/${fx.errors.open.id}`, bearer)).issue).toMatchObject({
        status: 'unresolved',
        count: fx.errors.open.count,
        fingerprint: fx.errors.open.fingerprint,
      });
      expect((await expectCall(base, 200, 'GET', `${project}/errors/${fx.errors.resolved.id}`, bearer)).issue).toMatchObject({
        status: 'resolved',
        count: fx.errors.resolved.count,
        fingerprint: fx.errors.resolved.fingerprint,
      });
      expect((await expectCall(base, 200, 'GET', `${project}/errors/settings`, bearer)).ingestOrigins).toEqual(fx.errors.ingestOrigins);
      expect((await expectCall(base, 200, 'GET', `${project}/error-alerts`, bearer)).recipients).toEqual(fx.errors.alertRecipients);

      // Deploys: the ready deploy, its build log (ClickHouse), the build source, the hook, the site on both hosts.
      expect((await expectCall(base, 200, 'GET', `${project}/deploys/${fx.deploys.deploy.id}`, bearer)).deploy).toMatchObject(fx.deploys.deploy);
      expect((await expectCall(base, 200, 'GET', `${project}/deploys/${fx.deploys.deploy.id}/logs`, bearer)).lines).toHaveLength(fx.deploys.logLines);
      // Settings added since the fixture was made take their defaults (the spa setting, issue 42: off).
      expect((await expectCall(base, 200, 'GET', `${project}/deploys/settings`, bearer)).settings).toEqual({ spa: false, ...fx.deploys.settings });
      expect((await expectCall(base, 200, 'GET', `${project}/deploys/hooks`, session)).hooks).toContainEqual(
        expect.objectContaining({ id: fx.deploys.hook.id, name: fx.deploys.hook.name, branch: fx.deploys.hook.branch }),
      );
      for (const host of [fx.deploys.site.host, fx.deploys.site.deployHost]) {
        expect(await call(base, 'GET', '/', { host }), host).toMatchObject({ status: 200, text: fx.deploys.site.body });
      }

      // Webhooks: the endpoint and its delivery log.
      expect((await expectCall(base, 200, 'GET', `${project}/webhooks/${fx.webhooks.endpoint.id}`, session)).endpoint).toMatchObject({
        url: fx.webhooks.endpoint.url,
        events: fx.webhooks.endpoint.events,
        description: fx.webhooks.endpoint.description,
      });
      const attempts = (await expectCall(base, 200, 'GET', `${project}/webhooks/${fx.webhooks.endpoint.id}/deliveries`, session)).deliveries;
      expect(
        attempts.map((a: { deliveryId: string; event: string; status: string }) => ({ deliveryId: a.deliveryId, event: a.event, status: a.status })),
      ).toEqual(fx.webhooks.deliveries);

      // Analytics: the same counts over the fixture's range, and every event by its uuid.
      const range = fx.analytics.range;
      expect((await expectCall(base, 200, 'GET', `${project}/analytics/top-events?${range}`, bearer)).data).toEqual(fx.analytics.topEvents);
      expect((await expectCall(base, 200, 'GET', fx.analytics.breakdown.query, bearer)).data).toEqual(fx.analytics.breakdown.data);
      const raw = (await expectCall(base, 200, 'GET', `${project}/analytics/events?${range}&limit=100`, bearer)).data;
      expect(raw.map((e: { uuid: string }) => e.uuid).sort()).toEqual(fx.analytics.events.map((e: { uuid: string }) => e.uuid).sort());

      // Flags: the definitions, and the edge's evaluation for the same visitor, answer for answer.
      const flags = (await expectCall(base, 200, 'GET', `${project}/flags`, bearer)).data;
      for (const f of fx.flags.definitions) expect(flags).toContainEqual(expect.objectContaining({ key: f.key, enabled: f.enabled }));
      const evaluation = await eventually(
        'the edge evaluates the flags',
        async () => {
          const r = await call(base, 'GET', fx.flags.evaluation.query, ingestHeaders);
          return r.status === 200 ? r.json : undefined;
        },
        WAIT_MS,
        200,
      );
      expect(evaluation).toEqual(fx.flags.evaluation.answer);

      // Uptime settings, the inbox, the alert mail already written.
      expect(await expectCall(base, 200, 'GET', `${project}/uptime/settings`, session)).toEqual(fx.uptime);
      expect((await expectCall(base, 200, 'GET', `${project}/email/inboxes`, session)).inboxes).toContainEqual(
        expect.objectContaining({ id: fx.inbox.id, address: fx.inbox.address }),
      );
      if (fx.mail.emlFiles.length) expect((await readdir(path.join(dataDir, 'mail'))).sort()).toEqual(expect.arrayContaining(fx.mail.emlFiles));

      // The old ingest key still authenticates, the allowed origins still apply, and the event counts into the old issue.
      const error = { batch: [{ name: fx.errors.open.name, message: fx.errors.open.message, stack: fx.errors.open.stack }] };
      await eventually(
        'the edge takes the old ingest key',
        async () => ((await call(base, 'POST', '/v1/errors/i', ingestHeaders, error)).status === 202 ? true : undefined),
        WAIT_MS,
        200,
      );
      const refused = await call(base, 'POST', '/v1/errors/i', { ...ingestHeaders, origin: 'https://not-allowed.example' }, error);
      expect([refused.status, refused.json?.error]).toEqual([403, 'origin_not_allowed']);
      const unresolved = await eventually(
        'the event is counted',
        async () => {
          const list = (await expectCall(base, 200, 'GET', `${project}/errors`, bearer)).data as Array<{ id: string; count: number }>;
          return list.some((i) => i.count > fx.errors.open.count) || list.length > 1 ? list : undefined;
        },
        WAIT_MS,
        200,
      );
      expect(unresolved.map((i) => [i.id, i.count])).toEqual([[fx.errors.open.id, fx.errors.open.count + 1]]);

      // The old webhook secret still signs: the endpoint, pointed at a receiver here, gets a test event signed with it.
      await expectCall(base, 200, 'PATCH', `${project}/webhooks/${fx.webhooks.endpoint.id}`, session, { url: receiver.url });
      await expectCall(base, 202, 'POST', `${project}/webhooks/test`, bearer);
      const test = await eventually(
        'the test event arrives',
        async () => receiver.received.find((d) => JSON.parse(d.body).event === 'webhook.test'),
        WAIT_MS,
        200,
      );
      expect(() => verifySignature(test.body, test.headers['service-signature'], fx.webhooks.endpoint.secret)).not.toThrow();

      // The old deploy hook still deploys: a new build from a new repository, live on the production host; the old
      // deploy's own host still serves the old build.
      const repo = await siteRepo(path.join(work, 'site-repo'), `<h1>after the upgrade from ${tag}</h1>`);
      await expectCall(base, 200, 'PATCH', `${project}/deploys/settings`, session, { repoUrl: repo });
      const hooked = await expectCall(base, 202, 'POST', `/v1/hooks/${fx.deploys.hook.token}`);
      expect(await deployEnded(base, project, hooked.deployId, bearer)).toMatchObject({ status: 'ready', trigger: { kind: 'hook', id: fx.deploys.hook.id } });
      const newSite = `<h1>after the upgrade from ${tag}</h1>\n`;
      await eventually(
        'the production host serves the new deploy',
        async () => ((await call(base, 'GET', '/', { host: fx.deploys.site.host })).text === newSite ? true : undefined),
        WAIT_MS,
        250,
      );
      expect(await call(base, 'GET', '/', { host: fx.deploys.site.deployHost })).toMatchObject({ status: 200, text: fx.deploys.site.body });
      expect(await first.stop()).toBe(0);

      // Every migration of today is recorded, and no deploy's artifact is stored where the data directory used to be.
      const db = await createPgliteStore(path.join(dataDir, 'pglite'));
      try {
        const versions = await db.query<{ version: string }>('SELECT version FROM schema_migrations ORDER BY version', []);
        expect(versions.rows.map((r) => r.version)).toEqual(migrationFiles('relational'));
        const dirs = await db.query<{ id: string; artifact_dir: string }>(
          'SELECT id, artifact_dir FROM deploys WHERE artifact_dir IS NOT NULL ORDER BY id',
          [],
        );
        for (const d of dirs.rows) expect(d.artifact_dir).toBe(`artifacts/${d.id}`);
      } finally {
        await db.close();
      }

      // A second start: nothing left to apply, and the data as the first start left it.
      const second = await startServiceProcess(ROOT, env);
      running.push(second);
      expect(appliedAtStart(second)).toEqual({ relational: [], analytical: [] });
      expect((await expectCall(second.base, 200, 'GET', `${project}/errors/${fx.errors.open.id}`, bearer)).issue.count).toBe(fx.errors.open.count + 1);
      expect(await call(second.base, 'GET', '/', { host: fx.deploys.site.host })).toMatchObject({ status: 200, text: newSite });
      expect(await second.stop()).toBe(0);
    } finally {
      await receiver.close();
      await rm(work, { recursive: true, force: true });
    }
  });
});
