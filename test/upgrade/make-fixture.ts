/**
 * Makes the upgrade fixture of a tagged state of `main` (README, "Upgrades"): that tag's own code, in a worktree with
 * its own lockfile's packages, is started on a fresh data directory and given data in every family through its public
 * API, then stopped with SIGTERM; its data directory is archived as test/upgrade/fixtures/<tag>.tar.xz, with
 * <tag>.json beside it saying what the fixture holds (ids, counts, the owner's credentials, the answers that version
 * gave), so the upgrade test (upgrade.e2e.test.ts) asserts exact values. Run once per tag, from the repository root:
 *
 *   npx tsx test/upgrade/make-fixture.ts v0.35.0
 *
 * Only the public API, as a user and their clients would call it: this file runs against code older than itself.
 * Needs what a deploy needs (Linux, bubblewrap), and loopback only.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../e2e/support/http-client.ts';
import { call, deployEnded, expectCall, FIXTURES, ROOT, signIn, siteRepo, startServiceProcess, webhookReceiver } from './upgrade-support.ts';

const OWNER = { email: 'owner@upgrade.test', password: 'upgrade-fixture-owner-password' };
const SLUG = 'upgrade';
const ORIGIN = 'https://app.upgrade.test';
const STACK_OPEN = 'TypeError: cart is undefined\n    at checkout (src/checkout.ts:12:5)\n    at pay (src/pay.ts:3:1)';
const STACK_RESOLVED = 'RangeError: page out of range\n    at paginate (src/list.ts:40:9)';
const WAIT_MS = 120_000;

function log(line: string): void {
  process.stderr.write(`make-fixture: ${line}\n`);
}

async function main(): Promise<void> {
  const tag = process.argv[2];
  if (!tag || !/^v\d+\.\d+\.\d+$/.test(tag)) throw new Error('usage: npx tsx test/upgrade/make-fixture.ts vX.Y.Z (an annotated tag of main)');
  const commit = execFileSync('git', ['rev-list', '-n', '1', tag], { cwd: ROOT }).toString().trim();
  const work = await mkdtemp(path.join(os.tmpdir(), `fixture-${tag}-`));
  // Sandboxed builds run as an unprivileged user and read the tag's sandbox init script from the worktree.
  await chmod(work, 0o755);
  const src = path.join(work, 'src');
  const dataDir = path.join(work, 'data');

  log(`worktree of ${tag} (${commit}) in ${src}`);
  execFileSync('git', ['worktree', 'add', '--detach', src, tag], { cwd: ROOT, stdio: 'inherit' });
  const receiver = await webhookReceiver();
  try {
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: src, stdio: 'inherit' });
    const repo = await siteRepo(path.join(work, 'site-repo'), '<h1>upgrade fixture: $GREETING</h1>');
    const service = await startServiceProcess(src, {
      LOG_LEVEL: 'warn',
      DATA_DIR: dataDir,
      OWNER_EMAIL: OWNER.email,
      OWNER_PASSWORD: OWNER.password,
      SETTINGS_REFRESH_MS: '250',
      ALLOW_LOCAL_REPOS: 'true',
      ALLOW_LOCAL_WEBHOOKS: 'true',
    });
    let record: Awaited<ReturnType<typeof populate>>;
    try {
      record = await populate(service.base, repo, receiver);
    } finally {
      // A normal stop: every consumer commits, the engines close their files.
      const code = await service.stop();
      if (code !== 0) throw new Error(`the ${tag} service exited with ${code}`);
    }

    // Only data in the archive: no lock file.
    await rm(path.join(dataDir, 'service.lock'), { force: true });
    const sizes = Object.fromEntries(
      (await readdir(dataDir)).map((n) => [
        n,
        Number(
          execFileSync('du', ['-sb', path.join(dataDir, n)])
            .toString()
            .split('\t')[0],
        ),
      ]),
    );
    log(`data directory, bytes: ${JSON.stringify(sizes)}`);
    const mail = existsSync(path.join(dataDir, 'mail')) ? (await readdir(path.join(dataDir, 'mail'))).filter((f) => f.endsWith('.eml')).sort() : [];
    const migrations = async (kind: string) =>
      (await readdir(path.join(src, 'platform/migrations', kind)))
        .filter((n) => /^\d{4}_.+\.sql$/.test(n))
        .map((n) => n.replace(/\.sql$/, ''))
        .sort();
    await mkdir(FIXTURES, { recursive: true });
    // xz with its large window: PGlite's two template databases are the same files, which gzip's 32 KB cannot see.
    const archive = path.join(FIXTURES, `${tag}.tar.xz`);
    execFileSync('sh', ['-c', 'tar --sort=name --owner=0 --group=0 --numeric-owner -C "$1" -cf - . | xz -9e -T1 > "$2"', 'tar', dataDir, archive]);
    const fixture = {
      tag,
      commit,
      madeBy: 'test/upgrade/make-fixture.ts',
      owner: OWNER,
      ...record,
      mail: { emlFiles: mail },
      migrations: { relational: await migrations('relational'), analytical: await migrations('analytical') },
    };
    await writeFile(path.join(FIXTURES, `${tag}.json`), `${JSON.stringify(fixture, null, 2)}\n`);
    log(`wrote ${path.relative(ROOT, archive)} (${(await stat(archive)).size} bytes) and ${tag}.json`);
  } finally {
    await receiver.close();
    execFileSync('git', ['worktree', 'remove', '--force', src], { cwd: ROOT, stdio: 'inherit' });
    await rm(work, { recursive: true, force: true });
  }
}

/** Every family, through the public API. Returns what the fixture holds, as that version answered. */
async function populate(base: string, repo: string, receiver: Awaited<ReturnType<typeof webhookReceiver>>) {
  const madeAt = new Date().toISOString();
  const session = await signIn(base, OWNER);
  const project = `/v1/projects/${SLUG}`;

  // The project and its settings: environment hosts, allowed ingest origins, alert recipients, no site monitor.
  const environmentHosts = { production: ['app.upgrade.test'], preview: ['*.preview.upgrade.test'] };
  const created = (await expectCall(base, 201, 'POST', '/v1/projects', session, { name: 'Upgrade fixture', slug: SLUG })).project;
  // Versions before issue 39 call them `domains` and refuse the new name (their PATCH body is strict).
  const renamed = await call(base, 'PATCH', project, session, { environmentHosts });
  if (renamed.status === 400) await expectCall(base, 200, 'PATCH', project, session, { domains: environmentHosts });
  else if (renamed.status !== 200) throw new Error(`PATCH ${project}: ${renamed.status} ${renamed.text.slice(0, 500)}`);
  const ingestOrigins = ['app.upgrade.test', '*.preview.upgrade.test'];
  await expectCall(base, 200, 'PATCH', `${project}/errors/settings`, session, { ingestOrigins });
  const alertRecipients = ['oncall@upgrade.test'];
  await expectCall(base, 200, 'PATCH', `${project}/error-alerts`, session, { recipients: alertRecipients });
  await expectCall(base, 200, 'PATCH', `${project}/uptime/settings`, session, { siteMonitor: false });

  // Keys: an ingest key, and an API key with the scopes the upgrade test reads and writes with.
  const ingest = (await expectCall(base, 201, 'POST', `${project}/keys`, session, { kind: 'ingest', name: 'fixture ingest' })).key;
  const scopes = ['project:read', 'errors:read', 'errors:write', 'deploys:read', 'deploys:write', 'webhooks:send', 'keys:read', 'analytics:read', 'flags:read'];
  const api = (await expectCall(base, 201, 'POST', `${project}/keys`, session, { kind: 'live', name: 'fixture api', scopes: [...scopes, 'flags:write'] })).key;
  const bearer = { authorization: `Bearer ${api.token}` };
  const ingestHeaders = { authorization: `Bearer ${ingest.token}`, origin: ORIGIN };

  // Errors: an issue of three events, and another of one event, resolved. Alert mail goes to DATA_DIR/mail.
  const postError = (stack: string, message: string) =>
    call(base, 'POST', '/v1/errors/i', ingestHeaders, { batch: [{ name: stack.split(':')[0], message, stack }] }).then((r) => r.status);
  await eventually('the edge knows the ingest key', async () => ((await postError(STACK_OPEN, 'cart is undefined')) === 202 ? true : undefined), WAIT_MS);
  for (const [stack, message] of [
    [STACK_OPEN, 'cart is undefined'],
    [STACK_OPEN, 'cart is undefined'],
    [STACK_RESOLVED, 'page out of range'],
  ]) {
    const status = await postError(stack!, message!);
    if (status !== 202) throw new Error(`an error event: ${status}`);
  }
  const issues = await eventually(
    'both issues are counted',
    async () => {
      const list = (await expectCall(base, 200, 'GET', `${project}/errors?sort=count`, bearer)).data as Array<{ id: string; name: string; count: number }>;
      if (list.length === 2 && list[0]!.count === 3 && list[1]!.count === 1) return list;
      throw new Error(`issues so far: ${JSON.stringify(list.map((i) => [i.name, i.count]))}`);
    },
    WAIT_MS,
  );
  const resolved = (await expectCall(base, 200, 'POST', `${project}/errors/${issues[1]!.id}/resolve`, bearer)).issue;
  const open = (await expectCall(base, 200, 'GET', `${project}/errors/${issues[0]!.id}`, bearer)).issue;

  // Webhooks: an endpoint for deploys and test events, delivered to the receiver here.
  const endpoint = (
    await expectCall(base, 201, 'POST', `${project}/webhooks`, session, {
      url: receiver.url,
      events: ['deploy.*', 'webhook.test'],
      description: 'upgrade fixture',
    })
  ).endpoint;

  // Deploys: the build source with a plain and a secret variable, a hook, a deploy through the hook, its site.
  const env = { GREETING: { value: 'hello' }, API_TOKEN: { value: 'fixture-secret-value', secret: true } };
  const settings = (
    await expectCall(base, 200, 'PATCH', `${project}/deploys/settings`, session, { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out', env })
  ).settings;
  const hook = (await expectCall(base, 201, 'POST', `${project}/deploys/hooks`, session, { name: 'main', branch: 'main' })).hook;
  const called = await expectCall(base, 202, 'POST', `/v1/hooks/${hook.token}`);
  const deploy = await deployEnded(base, project, called.deployId, bearer);
  if (deploy.status !== 'ready') throw new Error(`the fixture's deploy ended ${deploy.status}: ${JSON.stringify(deploy)}`);
  const logLines = (await expectCall(base, 200, 'GET', `${project}/deploys/${deploy.id}/logs`, bearer)).lines.length as number;
  const host = `${SLUG}.localhost`;
  const deployHost = `${deploy.id.replace(/_/g, '-')}.localhost`;
  const site = await call(base, 'GET', '/', { host });
  // The deploy's own host: 401 (its password page) on a version where new projects protect their previews (issue 42).
  if (site.status !== 200 || ![200, 401].includes((await call(base, 'GET', '/', { host: deployHost })).status))
    throw new Error(`the site does not answer: ${site.text}`);

  await expectCall(base, 202, 'POST', `${project}/webhooks/test`, bearer);
  const deliveries = await eventually(
    'both deliveries are logged as succeeded',
    async () => {
      const list = (await expectCall(base, 200, 'GET', `${project}/webhooks/${endpoint.id}/deliveries`, session)).deliveries as Array<{
        deliveryId: string;
        event: string;
        status: string;
      }>;
      return list.length === 2 && list.every((a) => a.status === 'succeeded') ? list : undefined;
    },
    WAIT_MS,
  );

  // Analytics: five events with the client's uuids, and what the reads answered over them.
  const events = [
    { event: 'pageview', distinctId: 'user-1', properties: { plan: 'pro' }, path: '/' },
    { event: 'pageview', distinctId: 'user-2', properties: { plan: 'free' }, path: '/pricing' },
    { event: 'pageview', distinctId: 'user-1', properties: { plan: 'pro' }, path: '/checkout' },
    { event: 'signup', distinctId: 'user-2', properties: { plan: 'free' } },
    { event: 'signup', distinctId: 'user-3', properties: { plan: 'pro' } },
  ].map((e) => ({ ...e, uuid: randomUUID() }));
  await expectCall(base, 202, 'POST', '/v1/analytics/i', ingestHeaders, { batch: events });
  const day = 86_400_000;
  const range = `from=${new Date(Date.parse(madeAt) - day).toISOString()}&to=${new Date(Date.parse(madeAt) + day).toISOString()}`;
  const topEvents = await eventually(
    'the events are counted',
    async () => {
      const top = (await expectCall(base, 200, 'GET', `${project}/analytics/top-events?${range}`, bearer)).data as Array<{ events: number }>;
      return top.reduce((n, e) => n + e.events, 0) === events.length ? top : undefined;
    },
    WAIT_MS,
  );
  const breakdownQuery = `${project}/analytics/breakdown?${range}&event=pageview&by=plan`;
  const breakdown = (await expectCall(base, 200, 'GET', breakdownQuery, bearer)).data;

  // Feature flags: one rolled out with variants and a payload, one off; their evaluation for one visitor.
  const flags = [
    {
      key: 'new-checkout',
      description: 'the one-page checkout',
      enabled: true,
      rolloutPercentage: 100,
      variants: [
        { key: 'blue', weight: 50 },
        { key: 'green', weight: 50 },
      ],
      payload: { copy: 'Pay now' },
    },
    { key: 'dark-mode', enabled: false, rolloutPercentage: 100 },
  ];
  for (const f of flags) await expectCall(base, 201, 'POST', `${project}/flags`, bearer, f);
  const evaluationQuery = '/v1/flags/i?distinctId=user-1&keys=new-checkout,dark-mode';
  const evaluation = await eventually(
    'the edge evaluates both flags',
    async () => {
      const r = await call(base, 'GET', evaluationQuery, ingestHeaders);
      return r.status === 200 && Object.values(r.json.flags as Record<string, { reason: string }>).every((f) => f.reason !== 'unknown_flag')
        ? r.json
        : undefined;
    },
    WAIT_MS,
  );

  // Mail: an inbox (the alert mail of the two new issues is already in DATA_DIR/mail, by the file mailer).
  const inbox = (await expectCall(base, 201, 'POST', `${project}/email/inboxes`, session, { localPart: 'support' })).inbox;

  return {
    madeAt,
    project: { id: created.id, slug: SLUG, name: created.name, environmentHosts },
    keys: {
      ingest: { id: ingest.id, name: ingest.name, token: ingest.token },
      api: { id: api.id, name: api.name, token: api.token, scopes: api.scopes },
    },
    errors: {
      origin: ORIGIN,
      ingestOrigins,
      alertRecipients,
      open: {
        id: open.id,
        name: open.name,
        status: open.status,
        count: open.count,
        fingerprint: open.fingerprint,
        stack: STACK_OPEN,
        message: 'cart is undefined',
      },
      resolved: { id: resolved.id, name: resolved.name, status: resolved.status, count: resolved.count, fingerprint: resolved.fingerprint },
    },
    deploys: {
      settings,
      hook: { id: hook.id, name: hook.name, branch: hook.branch, token: hook.token },
      deploy: { id: deploy.id, status: deploy.status, environment: deploy.environment, gitSha: deploy.gitSha, trigger: deploy.trigger },
      logLines,
      site: { host, deployHost, body: site.text },
    },
    webhooks: {
      endpoint: { id: endpoint.id, url: endpoint.url, events: endpoint.events, description: endpoint.description, secret: endpoint.secret },
      deliveries: deliveries.map((a) => ({ deliveryId: a.deliveryId, event: a.event, status: a.status })),
    },
    analytics: { events, range, topEvents, breakdown: { query: breakdownQuery, data: breakdown } },
    flags: { definitions: flags, evaluation: { query: evaluationQuery, answer: evaluation } },
    uptime: { siteMonitor: false },
    inbox: { id: inbox.id, address: inbox.address },
  };
}

main().catch((err) => {
  process.stderr.write(`make-fixture failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
