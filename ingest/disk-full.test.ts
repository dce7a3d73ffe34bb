import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { createInProcessBus } from '../platform/adapters/bus/in-process-bus.ts';
import { openTopicLog, topicLogDir, type LogRecord } from '../platform/adapters/bus/local-log.ts';
import { reportingDiskFull, startDiskSpaceWatch, type DiskSpace, type StatFs } from '../platform/data-dir/disk-space.ts';
import type { Platform, PlatformOverrides } from '../platform/platform.ts';
import * as errorEvents from '../schemas/bus/error-events.ts';
import { DISK_FULL_RETRY_AFTER_SEC } from '../schemas/error-codes.ts';
import { createIngestProject, createRecordingBus, type IngestProject } from '../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { inertAnalytics, inertMailer } from '../test/support/stubs.ts';
import { mountTmpfs, TMPFS_SKIP_REASON, type Tmpfs } from '../test/support/tmpfs.ts';
import { startIngestServer, type IngestServer } from './ingest-server.ts';

/**
 * The edge on a full disk (issue 36): while DATA_DIR's disk is low every batch route answers 503 `unavailable` with
 * Retry-After, counted as disk_full, and publishes nothing; a publish whose bus log runs out of space answers the same
 * and turns the watch low at once; once the watch finds room again, batches are taken, with no restart.
 */
const MB = 1024 * 1024;
let freeMb = 1000;
const statfs: StatFs = async () => ({ bavail: (freeMb * MB) / 4096, bsize: 4096 });

interface Edge {
  platform: Platform;
  server: IngestServer;
  base: string;
  project: IngestProject;
  disk: DiskSpace;
}
const running: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const stop of running.splice(0).reverse()) await stop();
  freeMb = 1000;
});

async function startEdge(overrides: (disk: DiskSpace) => PlatformOverrides): Promise<Edge> {
  const disk = await startDiskSpaceWatch({ dir: '/data', minFreeBytes: 100 * MB, statfs, intervalMs: 0 });
  const platform = await createTestPlatform({
    env: { SETTINGS_REFRESH_MS: '100' },
    overrides: { analytics: inertAnalytics, mailer: inertMailer, ...overrides(disk), disk },
  });
  running.push(() => platform.close());
  const project = await createIngestProject(platform);
  const server = await startIngestServer(platform, { port: 0, host: '127.0.0.1' });
  running.push(() => server.close());
  const base = `http://127.0.0.1:${server.port}`;
  const edge = { platform, server, base, project, disk };
  // The key is in the edge's cache once a batch is taken (the cache loads at start, after the project was made).
  expect((await postError(edge, 'first')).status).toBe(202);
  return edge;
}

const postError = (e: Edge, message: string, stackChars = 40, events = 1) =>
  fetch(`${e.base}/v1/errors/i`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e.project.ingestKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      batch: Array.from({ length: events }, (_, i) => ({ name: 'Error', message: `${message} ${i}`, stack: `Error: ${message}\n${'x'.repeat(stackChars)}` })),
    }),
  });
const postAnalytics = (e: Edge) =>
  fetch(`${e.base}/v1/analytics/i`, {
    method: 'POST',
    headers: { authorization: `Bearer ${e.project.ingestKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ batch: [{ event: 'pageview', distinctId: 'u1' }] }),
  });
const counters = async (e: Edge, route: 'errors' | 'analytics') => (await (await fetch(`${e.base}/v1/${route}/i/health`)).json()).counters;

async function expectDiskFull(res: Response) {
  expect(res.status).toBe(503);
  expect(res.headers.get('retry-after')).toBe(String(DISK_FULL_RETRY_AFTER_SEC));
  expect(res.headers.get('content-type')).toContain('application/json');
  expect(await res.json()).toEqual({ error: 'unavailable', message: expect.stringContaining('out of disk space') });
}

describe('the edge while the disk is low', () => {
  it('refuses every batch with 503 unavailable and Retry-After, counted as disk_full, publishing nothing; takes them again once there is room', async () => {
    const bus = createRecordingBus();
    const e = await startEdge(() => ({ bus }));
    const published = bus.published.length;

    freeMb = 99;
    await e.disk.check();
    await expectDiskFull(await postError(e, 'while low'));
    await expectDiskFull(await postAnalytics(e));
    // Admission before the disk: a bad key is still told so.
    const stranger = await fetch(`${e.base}/v1/errors/i`, {
      method: 'POST',
      headers: { authorization: 'Bearer cak_live_unknown', 'content-type': 'application/json' },
      body: '{"batch":[]}',
    });
    expect(stranger.status).toBe(401);
    expect(bus.published.length).toBe(published);
    expect(await counters(e, 'errors')).toMatchObject({ disk_full: 1, accepted_batches: 1 });
    expect(await counters(e, 'analytics')).toMatchObject({ disk_full: 1, accepted_batches: 0 });

    freeMb = 100;
    await e.disk.check();
    expect((await postError(e, 'after')).status).toBe(202);
    expect((await postAnalytics(e)).status).toBe(202);
    expect(await counters(e, 'errors')).toMatchObject({ disk_full: 1, accepted_batches: 2 });
    expect(bus.published.length).toBe(published + 2);
  });
});

describe.skipIf(TMPFS_SKIP_REASON)(`the edge when the bus's log runs out of space${TMPFS_SKIP_REASON ? ` (skipped: ${TMPFS_SKIP_REASON})` : ''}`, () => {
  it('answers 503 disk_full, the watch turns low at once, the log keeps exactly what was acked, and batches are taken again once there is room', async () => {
    const fs: Tmpfs = mountTmpfs(4);
    running.push(() => fs.unmount());
    const logDir = path.join(fs.dir, 'bus');
    // The statfs the watch reads says there is plenty: only the failed write can tell it the disk is full.
    const e = await startEdge((disk) => ({ bus: reportingDiskFull(createInProcessBus({ logDir }), disk) }));
    expect((await postError(e, 'acked')).status).toBe(202);

    fs.fill(0);
    // A batch larger than the slack of the log's last page.
    await expectDiskFull(await postError(e, 'no room', 8000, 6));
    expect(e.disk.state()).toMatchObject({ low: true, why: 'write_failed' });
    await expectDiskFull(await postError(e, 'refused at admission'));
    expect(await counters(e, 'errors')).toMatchObject({ disk_full: 2, accepted_batches: 2, bus_unavailable: 0 });

    fs.unfill();
    await e.disk.check();
    expect(e.disk.low).toBe(false);
    expect((await postError(e, 'after', 8000, 6)).status).toBe(202);
    await e.platform.bus.close();

    const log = await openTopicLog(topicLogDir(logDir, errorEvents.TOPIC), () => undefined);
    const records: LogRecord[] = [];
    await log.readFrom(0n, (rs) => void records.push(...rs));
    const batches = records.map((r) => errorEvents.decodeErrorBatch(r.value)!.events.map((ev) => ev.message));
    await log.close();
    expect(batches).toEqual([['first 0'], ['acked 0'], ['after 0', 'after 1', 'after 2', 'after 3', 'after 4', 'after 5']]);
  });
});
