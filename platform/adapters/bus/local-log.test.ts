import nodeFs, { appendFileSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { mountTmpfs, TMPFS_SKIP_REASON, type Tmpfs } from '../../../test/support/tmpfs.ts';
import { openTopicLog, READ_CHUNK_BYTES, type LogRecord, type TopicLog } from './local-log.ts';

/**
 * The bus's log (local-log.ts): appends one after another, and on a disk that fills (issue 36), on a real tmpfs: an
 * append that does not fit is refused with ENOSPC and cut back off, so what was acknowledged before stays readable and
 * the log takes appends again once there is room; a segment that cannot be created when the log should roll leaves
 * the log working.
 */
const mounts: Tmpfs[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const m of mounts.splice(0)) m.unmount();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const message = (i: number, bytes = 100) => ({ key: 'k', value: Buffer.alloc(bytes, i % 256) });
const readAll = async (log: TopicLog, from = 0n) => {
  const records: LogRecord[] = [];
  await log.readFrom(from, (rs) => void records.push(...rs));
  return records;
};
const sizeOf = (dir: string) => readdirSync(dir).reduce((n, f) => (f.endsWith('.log') ? n + statSync(path.join(dir, f)).size : n), 0);

describe('appends', () => {
  it('an append made as soon as the previous one resolved is written too (it once waited forever)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bus-log-'));
    dirs.push(dir);
    const log = await openTopicLog(dir, () => undefined);
    for (let i = 0; i < 5; i++) expect(await log.append([message(i)])).toBe(BigInt(i));
    await log.close();
  });
});

describe('reading a large segment (a restart)', () => {
  afterEach(() => vi.restoreAllMocks());

  /** The lengths of the reads made on segment files, and whether any was read whole at once. */
  function watchSegmentReads(): { lengths: number[]; whole: () => boolean } {
    const lengths: number[] = [];
    const open = nodeFs.promises.open;
    vi.spyOn(nodeFs.promises, 'open').mockImplementation(async (...args: Parameters<typeof open>) => {
      const handle = await open(...args);
      if (String(args[0]).endsWith('.log')) {
        const read = handle.read.bind(handle) as (b: Buffer, o: number, l: number, p: number) => ReturnType<typeof handle.read>;
        Object.assign(handle, { read: (b: Buffer, o: number, l: number, p: number) => (lengths.push(l), read(b, o, l, p)) });
      }
      return handle;
    });
    const readFileSync = vi.spyOn(nodeFs, 'readFileSync');
    const readFile = vi.spyOn(nodeFs.promises, 'readFile');
    const onSegment = (args: unknown[]) => String(args[0]).endsWith('.log');
    return { lengths, whole: () => readFileSync.mock.calls.some(onSegment) || readFile.mock.calls.some(onSegment) };
  }

  it('recovers and reads back in bounded chunks, the event loop turning between them', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bus-log-'));
    dirs.push(dir);
    const chunks = 16;
    const perAppend = 32;
    const valueBytes = READ_CHUNK_BYTES / perAppend - 64;
    const written = await openTopicLog(dir, () => undefined);
    for (let i = 0; i < chunks; i++) await written.append(Array.from({ length: perAppend }, (_, j) => message(i * perAppend + j, valueBytes)));
    await written.close();
    expect(sizeOf(dir)).toBeGreaterThan((chunks - 1) * READ_CHUNK_BYTES);

    const reads = watchSegmentReads();
    const log = await openTopicLog(dir, () => undefined);
    expect(log.nextOffset).toBe(BigInt(chunks * perAppend));
    expect(reads.whole()).toBe(false);
    expect(reads.lengths.length).toBeGreaterThanOrEqual(chunks);
    expect(Math.max(...reads.lengths)).toBeLessThanOrEqual(READ_CHUNK_BYTES);

    // Read back: records come a chunk at a time, and the loop turns (setImmediate runs) between two chunks.
    let turns = 0;
    let counting = true;
    const tick = () => {
      if (!counting) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const turnsAtChunk: number[] = [];
    const records: LogRecord[] = [];
    await log.readFrom(1n, (rs) => {
      turnsAtChunk.push(turns);
      records.push(...rs);
    });
    counting = false;
    expect(turnsAtChunk.length).toBeGreaterThanOrEqual(chunks);
    for (let i = 1; i < turnsAtChunk.length; i++) expect(turnsAtChunk[i]).toBeGreaterThan(turnsAtChunk[i - 1]!);
    expect(reads.whole()).toBe(false);
    expect(records.map((r) => r.offset)).toEqual(Array.from({ length: chunks * perAppend - 1 }, (_, i) => BigInt(i + 1)));
    expect(records.every((r, i) => r.value.length === valueBytes && r.value[0] === (i + 1) % 256)).toBe(true);
    await log.close();
  });

  it('reads a record longer than a chunk whole, and cuts off a torn one at the end', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bus-log-'));
    dirs.push(dir);
    const written = await openTopicLog(dir, () => undefined);
    await written.append([message(1, 10), message(2, 3 * READ_CHUNK_BYTES + 5), message(3, 10)]);
    await written.close();
    const segment = path.join(dir, readdirSync(dir).find((f) => f.endsWith('.log'))!);
    const whole = statSync(segment).size;
    // A torn record: its header promises a longer body than the file holds.
    appendFileSync(segment, Buffer.from([0, 0x10, 0, 0, 1, 2, 3, 4, 0, 1, 2]));

    const log = await openTopicLog(dir, () => undefined);
    expect(statSync(segment).size).toBe(whole);
    expect((await readAll(log)).map((r) => [r.offset, r.value.length, r.value[0]])).toEqual([
      [0n, 10, 1],
      [1n, 3 * READ_CHUNK_BYTES + 5, 2],
      [2n, 10, 3],
    ]);
    expect(await log.append([message(4)])).toBe(3n);
    await log.close();
  });
});

describe.skipIf(TMPFS_SKIP_REASON)(`the bus's log on a full disk${TMPFS_SKIP_REASON ? ` (skipped: ${TMPFS_SKIP_REASON})` : ''}`, () => {
  it('refuses an append that does not fit, cuts it off, keeps what was acked, and appends again once there is room', async () => {
    const fs = mountTmpfs(2);
    mounts.push(fs);
    const dir = path.join(fs.dir, 'bus', 'errors');
    const errors: unknown[] = [];
    const log = await openTopicLog(dir, (err) => errors.push(err));
    expect(await log.append([message(0), message(1)])).toBe(0n);
    const acked = sizeOf(dir);

    fs.fill(0);
    // Larger than the slack of the segment's last page, so the write needs space the disk no longer has.
    const refused = await log.append([message(2, 64 * 1024)]).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'ENOSPC' });
    expect(sizeOf(dir)).toBe(acked);
    expect(log.nextOffset).toBe(2n);

    fs.unfill();
    expect(await log.append([message(3, 64 * 1024)])).toBe(2n);
    await log.close();
    expect(errors).toEqual([]);

    const reopened = await openTopicLog(dir, (err) => errors.push(err));
    const records = await readAll(reopened);
    expect(records.map((r) => [r.offset, r.value.length, r.value[0]])).toEqual([
      [0n, 100, 0],
      [1n, 100, 1],
      [2n, 64 * 1024, 3],
    ]);
    await reopened.close();
  });

  it('a segment that cannot be created when the log should roll is reported; the appends go on in the current one', async () => {
    // Room for the topic's folder and its first segment, and no file more.
    const fs = mountTmpfs(2, { inodes: 3 });
    mounts.push(fs);
    const dir = path.join(fs.dir, 'errors');
    const errors: Array<{ err: unknown; what: string }> = [];
    const log = await openTopicLog(dir, (err, what) => errors.push({ err, what }), 150);
    expect(await log.append([message(0)])).toBe(0n);
    expect(await log.append([message(1)])).toBe(1n);
    expect(await log.append([message(2)])).toBe(2n);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ err: { code: 'ENOSPC' }, what: expect.stringContaining('starting a segment') });
    await log.close();
    const reopened = await openTopicLog(dir, () => undefined, 150);
    expect((await readAll(reopened)).map((r) => r.offset)).toEqual([0n, 1n, 2n]);
    await reopened.close();
  });
});
