import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { openTopicLog, topicLogDir } from '../../platform/adapters/bus/local-log.ts';
import * as errorEvents from '../../schemas/bus/error-events.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { freePort } from './support/console-service.ts';
import { eventually } from './support/http-client.ts';
import { spawnRole, type RoleProcess } from './support/spawn-role.ts';

/**
 * The single process on its embedded defaults answers 202 once a batch is in the bus's log on disk, before the
 * processor ran (issue 29). So a crash (SIGKILL: no shutdown, no commit) right after the 202s must lose nothing: the
 * next start replays what the error pipeline had not committed, and every accepted event is counted exactly once.
 */
const BATCHES = 40;
const EVENTS_PER_BATCH = 10;
const OWNER = { email: 'crash@example.com', password: 'crash-password-embedded' };

const processes: RoleProcess[] = [];
afterAll(async () => {
  for (const p of processes) await p.kill();
});

it('every event that got a 202 is counted exactly once after the embedded process is killed and started again', { timeout: 240_000 }, async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-embedded-crash-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    SETTINGS_REFRESH_MS: '250',
    TRUST_PROXY: 'true',
  };
  const startService = async () => {
    const p = await spawnRole('all', env, {}, 120_000);
    processes.push(p);
    return p;
  };
  const first = await startService();

  const signIn = await fetch(`${base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  expect(signIn.status).toBe(200);
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const session = { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
  const created = await fetch(`${base}/v1/projects`, {
    method: 'POST',
    headers: session,
    body: JSON.stringify({ name: 'crash', slug: 'crash', environmentHosts: { production: ['app.example.com'], preview: [] } }),
  });
  expect(created.status).toBe(201);
  const keyRes = await fetch(`${base}/v1/projects/crash/keys`, { method: 'POST', headers: session, body: JSON.stringify({ kind: 'ingest', name: 'k' }) });
  expect(keyRes.status).toBe(201);
  const key = ((await keyRes.json()) as { key: { token: string } }).key.token;

  let forwarded = 0;
  const post = (events: number, tag: string) =>
    fetch(`${base}/v1/errors/i`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        origin: 'https://app.example.com',
        // One address per request: the per key-and-IP limit stays out of the way.
        'x-forwarded-for': `10.0.${forwarded >> 8}.${forwarded++ & 255}`,
      },
      body: JSON.stringify({
        batch: Array.from({ length: events }, (_, e) => ({
          name: 'Error',
          // Three fingerprints; the numbers differ, so each stays one issue.
          message: `Job ${['import', 'export', 'sync'][e % 3]} failed after ${e} ms (${tag})`,
          stack: `Error: x\n    at job${e % 3} (https://app.example.com/assets/app.js:1:${e % 3})`,
        })),
      }),
    });
  // The edge learns the key on its settings refresh.
  await eventually('the edge knows the key', async () => ((await post(1, 'probe')).status === 202 ? true : undefined), 60_000, 200);

  const statuses = await Promise.all(Array.from({ length: BATCHES }, (_, b) => post(EVENTS_PER_BATCH, `b${b}`).then((r) => r.status)));
  await first.kill();
  expect(statuses.filter((s) => s === 202)).toHaveLength(BATCHES);
  const accepted = 1 + BATCHES * EVENTS_PER_BATCH;

  // The crash left 202'd batches the pipeline had not committed: the restart has something to replay.
  const log = await openTopicLog(topicLogDir(path.join(dataDir, 'bus'), errorEvents.TOPIC), () => undefined);
  const committed = log.committed(CONSUMER_GROUPS.errorPipeline) ?? 0n;
  const published = log.nextOffset;
  await log.close();
  expect(published).toBe(BigInt(BATCHES + 1));
  expect(committed).toBeLessThan(published);

  await startService();
  const counted = async () => {
    const r = await fetch(`${base}/v1/projects/crash/errors?status=unresolved&limit=100`, { headers: { cookie } });
    if (r.status !== 200) return undefined;
    return ((await r.json()) as { data: Array<{ count: number }> }).data.reduce((n, i) => n + i.count, 0);
  };
  await eventually('every accepted event counted', async () => ((await counted()) === accepted ? true : undefined), 90_000, 200);
  // Exactly once: nothing replayed counts twice, however long we look.
  await new Promise((r) => setTimeout(r, 1_000));
  expect(await counted()).toBe(accepted);
});
