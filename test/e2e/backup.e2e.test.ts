import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { gitRepoWith } from '../support/git-repo.ts';
import { eventually, getWithHost } from './support/http-client.ts';
import { json, killStarted, npmRun, signIn, startService } from './support/service-process.ts';

/**
 * Backups and recovery (issue 36) with the real commands: every family's data in `npm start`'s data directory (an
 * issue, a deploy built from a git repository with its artifact, keys, a webhook endpoint, analytics events, a flag,
 * an alert mail's .eml), `npm run backup` while error batches keep arriving, `npm run restore` into an empty directory
 * (a non-empty one refused first), and the service started on the restore finds all of it. Every error event
 * acknowledged before the backup started is counted exactly once after the restore, and no event is counted twice
 * (each batch is an issue of its own, so its count says how often its events were counted).
 */
const works: string[] = [];
afterAll(async () => {
  killStarted();
  for (const w of works) await rm(w, { recursive: true, force: true });
});

const EVENTS_PER_BATCH = 3;
/** Letters only: the fingerprint may ignore digits. */
const tagOf = (i: number) =>
  `t${i
    .toString(26)
    .split('')
    .map((c) => String.fromCharCode(97 + Number.parseInt(c, 26)))
    .join('')}`;

/** Every issue of the project, by message, with its count. */
async function issueCounts(base: string, session: Record<string, string>): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  let cursor: string | null = null;
  do {
    const page = await json(base, `/v1/projects/kept/errors?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, session);
    expect(page.status).toBe(200);
    for (const issue of page.body.data as Array<{ message: string; count: number }>) counts.set(issue.message, issue.count);
    cursor = page.body.nextCursor;
  } while (cursor);
  return counts;
}

it('a backup made under load restores every family of data, each acknowledged event counted once', { timeout: 600_000 }, async () => {
  const work = await mkdtemp(path.join(os.tmpdir(), 'e2e-backup-'));
  works.push(work);
  const dataDir = path.join(work, 'data');
  const repo = gitRepoWith({ 'build.sh': 'mkdir -p out; echo "<h1>kept in the backup</h1>" > out/index.html' }, path.join(work, 'repo'));

  // 1. Every family of data.
  const env = { ALLOW_LOCAL_WEBHOOKS: 'true', TRUST_PROXY: 'true' };
  const first = await startService(dataDir, env);
  const session = await signIn(first.base);
  const api = (route: string, init: { method?: string; body?: unknown } = {}) => json(first.base, `/v1/projects/kept${route}`, session, init);
  expect(
    (
      await json(first.base, '/v1/projects', session, {
        method: 'POST',
        body: { name: 'Kept', slug: 'kept', environmentHosts: { production: ['app.example.com'], preview: [] } },
      })
    ).status,
  ).toBe(201);
  const key = await api('/keys', { method: 'POST', body: { kind: 'ingest', name: 'browser' } });
  expect(key.status).toBe(201);
  const ingestKey = key.body.key.token as string;
  // Error ingest is rate limited per key (and per key and IP): the load below spreads over keys and client addresses.
  const loadKeys = [ingestKey];
  for (let i = 1; i < 4; i++) loadKeys.push((await api('/keys', { method: 'POST', body: { kind: 'ingest', name: `load ${i}` } })).body.key.token);
  const webhook = await api('/webhooks', { method: 'POST', body: { url: 'http://127.0.0.1:9/hooks/kept', events: ['webhook.test'] } });
  expect(webhook.status).toBe(201);
  const flag = await api('/flags', { method: 'POST', body: { key: 'kept-flag', enabled: true, rolloutPercentage: 100 } });
  expect(flag.status).toBe(201);
  expect((await api('/error-alerts/test', { method: 'POST', body: {} })).status).toBe(202);
  expect((await api('/deploys/settings', { method: 'PATCH', body: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' } })).status).toBe(200);
  const deploy = await api('/deploys', { method: 'POST', body: {} });
  expect(deploy.status).toBe(202);
  const deployId = deploy.body.deploy.id as string;

  const ingest = (route: string, body: unknown) =>
    fetch(`${first.base}${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingestKey}`, 'content-type': 'application/json', origin: 'https://app.example.com' },
      body: JSON.stringify(body),
    }).then((r) => r.status);
  const postBatch = (i: number) =>
    fetch(`${first.base}/v1/errors/i`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${loadKeys[i % loadKeys.length]}`,
        'content-type': 'application/json',
        origin: 'https://app.example.com',
        'x-forwarded-for': `10.0.${Math.floor(i / 200)}.${i % 200}`,
      },
      body: JSON.stringify({
        batch: Array.from({ length: EVENTS_PER_BATCH }, () => ({
          name: 'Error',
          message: `load ${tagOf(i)}`,
          stack: `Error: load ${tagOf(i)}\n    at ${tagOf(i)} (src/load.ts:1:1)`,
        })),
      }),
    }).then((r) => r.status);
  const now = Date.now();
  const pageview = { batch: [{ event: 'kept_pageview', distinctId: 'u1', timestamp: now - 1000 }] };
  // The first one accepted is the edge knowing the new key (it refreshes every 250 ms here).
  await eventually('the edge knows the key', async () => ((await ingest('/v1/analytics/i', pageview)) === 202 ? true : undefined), 60_000, 200);
  expect(await ingest('/v1/analytics/i', { batch: [{ event: 'kept_signup', distinctId: 'u2', timestamp: now - 500 }] })).toBe(202);
  const range = `from=${now - 3_600_000}&to=${now + 3_600_000}`;
  await eventually('the analytics events are stored', async () => {
    const r = await api(`/analytics/events?${range}&limit=10`);
    return r.body.data?.length === 2 ? true : undefined;
  });
  for (const k of loadKeys) {
    const known = () => fetch(`${first.base}/v1/flags/i?distinctId=probe`, { headers: { authorization: `Bearer ${k}`, origin: 'https://app.example.com' } });
    await eventually('the edge knows every key', async () => ((await known()).status === 200 ? true : undefined), 60_000, 200);
  }
  const built = await eventually(
    'the build ends',
    async () => {
      const d = (await api(`/deploys/${deployId}`)).body.deploy;
      return ['ready', 'failed', 'canceled'].includes(d.status) ? d : undefined;
    },
    180_000,
    250,
  );
  expect(built).toMatchObject({ status: 'ready' });
  expect((await getWithHost(`${first.base}/`, 'kept.localhost')).body).toContain('kept in the backup');
  // The test alert's mail (each new issue below mails too).
  const mail = (await readdir(path.join(dataDir, 'mail'))).filter((f) => f.endsWith('.eml'));
  expect(mail.length).toBe(1);

  // 2. Error batches acknowledged before the backup, then more arriving while it runs.
  const acked: string[] = [];
  let next = 0;
  for (; next < 20; next++) if ((await postBatch(next)) === 202) acked.push(tagOf(next));
  expect(acked.length).toBe(20);
  let loading = true;
  const load = (async () => {
    while (loading && next < 700) {
      const i = next++;
      if ((await postBatch(i)) === 202) acked.push(tagOf(i));
    }
  })();
  // Some of the load is acknowledged before the backup starts: those count too.
  await eventually('load is arriving', async () => (acked.length >= 30 ? true : undefined));
  const ackedBeforeBackup = [...acked];
  const file = path.join(work, 'backups', 'nightly.tar.gz');
  await mkdir(path.dirname(file));
  const backup = npmRun('backup', [file], { DATA_DIR: dataDir });
  const backupExit = await backup.exited;
  loading = false;
  await load;
  expect(backupExit, backup.stderr()).toBe(0);
  expect(backup.stdout()).toContain(`copied by the service that holds it: pid ${first.child.pid}`);
  for (const part of ['pglite', 'chdb', 'bus', 'artifacts', 'mail']) expect(backup.stdout()).toMatch(new RegExp(`\\n  ${part} +\\d+ files`));
  expect(acked.length).toBeGreaterThan(ackedBeforeBackup.length);
  first.child.kill('SIGTERM');
  expect(await first.exited).toBe(0);
  // With the service stopped, the backup takes the directory itself.
  const stoppedFile = path.join(work, 'backups', 'stopped.tar.gz');
  const stoppedBackup = npmRun('backup', [stoppedFile], { DATA_DIR: dataDir });
  expect(await stoppedBackup.exited, stoppedBackup.stderr()).toBe(0);
  expect(stoppedBackup.stdout()).toContain('copied with the service stopped');

  // 3. A restore refuses a directory that is not empty, and fills an empty one.
  const refused = npmRun('restore', [file], { DATA_DIR: dataDir });
  expect(await refused.exited).toBe(1);
  expect(refused.stderr()).toContain(`the data directory ${dataDir} is not empty: it holds artifacts, bus, chdb, mail, pglite.`);
  const restoredDir = path.join(work, 'restored');
  const restore = npmRun('restore', [file], { DATA_DIR: restoredDir });
  expect(await restore.exited, restore.stderr()).toBe(0);
  expect(restore.stdout()).toContain(`restored ${file} into ${restoredDir}`);

  // 4. The service on the restore: every family is there.
  const second = await startService(restoredDir, env);
  const s2 = await signIn(second.base);
  const api2 = (route: string) => json(second.base, `/v1/projects/kept${route}`, s2);
  expect((await api2('/keys')).body.keys.map((k: { id: string }) => k.id)).toContain(key.body.key.id);
  expect((await api2('/webhooks')).body.endpoints.map((w: { id: string }) => w.id)).toContain(webhook.body.endpoint.id);
  expect((await api2('/flags/kept-flag')).body.flag).toMatchObject({ key: 'kept-flag', enabled: true });
  expect((await api2(`/deploys/${deployId}`)).body.deploy).toMatchObject({ status: 'ready' });
  expect((await getWithHost(`${second.base}/`, 'kept.localhost')).body).toContain('kept in the backup');
  expect(((await api2(`/analytics/events?${range}&limit=10`)).body.data as Array<{ event: string }>).map((e) => e.event).sort()).toEqual([
    'kept_pageview',
    'kept_signup',
  ]);
  expect(await readdir(path.join(restoredDir, 'mail'))).toContain(mail[0]);

  // Every batch acknowledged before the backup started is one issue counted once: those the stores held at the
  // copy, and those the bus's log replays after the restore.
  const counts = await eventually(
    'every batch acknowledged before the backup is counted',
    async () => {
      const c = await issueCounts(second.base, s2);
      return ackedBeforeBackup.every((tag) => c.get(`load ${tag}`) === EVENTS_PER_BATCH) ? c : undefined;
    },
    120_000,
    500,
  );
  // A batch posted after the restore is counted once its turn comes: everything replayed before it was handled.
  const restoredKey = ingestKey;
  const after = await fetch(`${second.base}/v1/errors/i`, {
    method: 'POST',
    headers: { authorization: `Bearer ${restoredKey}`, 'content-type': 'application/json', origin: 'https://app.example.com' },
    body: JSON.stringify({ batch: [{ name: 'Error', message: 'after the restore', stack: 'Error: after the restore\n    at sentinel (src/s.ts:1:1)' }] }),
  });
  expect(after.status).toBe(202);
  const settled = await eventually(
    'the batch posted after the restore is counted',
    async () => {
      const c = await issueCounts(second.base, s2);
      return c.get('after the restore') === 1 ? c : undefined;
    },
    120_000,
    500,
  );
  for (const tag of ackedBeforeBackup) expect(settled.get(`load ${tag}`), tag).toBe(EVENTS_PER_BATCH);
  // No batch is counted twice, whenever it arrived.
  const over = [...settled].filter(([message, n]) => message.startsWith('load ') && n > EVENTS_PER_BATCH);
  expect(over).toEqual([]);
  expect(counts.size).toBeGreaterThanOrEqual(ackedBeforeBackup.length);
  second.child.kill('SIGTERM');
  expect(await second.exited).toBe(0);

  // The backup made with the service stopped restores as well: every engine opens on it.
  const fromStopped = path.join(work, 'restored-from-stopped');
  const restoreStopped = npmRun('restore', [stoppedFile], { DATA_DIR: fromStopped });
  expect(await restoreStopped.exited, restoreStopped.stderr()).toBe(0);
  const third = await startService(fromStopped, env);
  const s3 = await signIn(third.base);
  const api3 = (route: string) => json(third.base, `/v1/projects/kept${route}`, s3);
  expect((await api3('/flags/kept-flag')).body.flag).toMatchObject({ key: 'kept-flag' });
  expect((await api3(`/analytics/events?${range}&limit=10`)).body.data).toHaveLength(2);
  // Every batch acknowledged before the stop: what the first service had not processed replays now.
  const stoppedCounts = await eventually(
    'every acknowledged batch is counted',
    async () => {
      const c = await issueCounts(third.base, s3);
      return acked.every((tag) => c.get(`load ${tag}`) === EVENTS_PER_BATCH) ? c : undefined;
    },
    120_000,
    500,
  );
  expect([...stoppedCounts].filter(([, n]) => n > EVENTS_PER_BATCH)).toEqual([]);
  expect((await getWithHost(`${third.base}/`, 'kept.localhost')).body).toContain('kept in the backup');
  third.child.kill('SIGTERM');
  expect(await third.exited).toBe(0);
});
