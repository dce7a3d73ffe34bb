import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mountTmpfs, TMPFS_SKIP_REASON, type Tmpfs } from '../../../test/support/tmpfs.ts';
import { openTopicLog } from './local-log.ts';

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
const sizeOf = (dir: string) => readdirSync(dir).reduce((n, f) => (f.endsWith('.log') ? n + statSync(path.join(dir, f)).size : n), 0);

describe('appends', () => {
  it('an append made as soon as the previous one resolved is written too (it once waited forever)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'bus-log-'));
    dirs.push(dir);
    const log = openTopicLog(dir, () => undefined);
    for (let i = 0; i < 5; i++) expect(await log.append([message(i)])).toBe(BigInt(i));
    await log.close();
  });
});

describe.skipIf(TMPFS_SKIP_REASON)(`the bus's log on a full disk${TMPFS_SKIP_REASON ? ` (skipped: ${TMPFS_SKIP_REASON})` : ''}`, () => {
  it('refuses an append that does not fit, cuts it off, keeps what was acked, and appends again once there is room', async () => {
    const fs = mountTmpfs(2);
    mounts.push(fs);
    const dir = path.join(fs.dir, 'bus', 'errors');
    const errors: unknown[] = [];
    const log = openTopicLog(dir, (err) => errors.push(err));
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

    const reopened = openTopicLog(dir, (err) => errors.push(err));
    const records = reopened.readFrom(0n);
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
    const log = openTopicLog(dir, (err, what) => errors.push({ err, what }), 150);
    expect(await log.append([message(0)])).toBe(0n);
    expect(await log.append([message(1)])).toBe(1n);
    expect(await log.append([message(2)])).toBe(2n);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ err: { code: 'ENOSPC' }, what: expect.stringContaining('starting a segment') });
    await log.close();
    const reopened = openTopicLog(dir, () => undefined, 150);
    expect(reopened.readFrom(0n).map((r) => r.offset)).toEqual([0n, 1n, 2n]);
    await reopened.close();
  });
});
