import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConsumedMessage } from '../../ports/bus.ts';
import { createInProcessBus } from './in-process-bus.ts';
import { openTopicLog, type LogRecord, type TopicLog } from './local-log.ts';

/**
 * The bus's log copied for a backup while it is written (local-log.ts `snapshot`, in-process-bus.ts `snapshot`): the
 * copy holds what was acknowledged (synced) before the call and each group's commit as it was then, whatever is
 * appended, committed or deleted by retention while the copy is made; it opens as a log of its own.
 */
const dirs: string[] = [];
const tempDir = () => {
  const d = mkdtempSync(path.join(os.tmpdir(), 'bus-snapshot-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const message = (i: number) => ({ key: 'k', value: Buffer.from(`m${i}-${'x'.repeat(60)}`) });
const values = (records: Array<{ value: Buffer }>) => records.map((r) => r.value.toString().split('-')[0]);

describe("the bus's log, copied while it is written", () => {
  it('holds the acknowledged records and the commits of the moment, not an append in flight nor a later commit', async () => {
    const dir = path.join(tempDir(), 'log');
    const log = await openTopicLog(dir, () => undefined, 256);
    for (let i = 0; i < 10; i++) await log.append([message(i)]);
    log.commit('g', 3n);
    expect(readdirSync(dir).filter((f) => f.endsWith('.log')).length).toBeGreaterThan(2);

    // In one turn: an append not yet synced, the copy, then a commit past every segment but the last (retention
    // deletes them while the copy is being made).
    const inFlight = log.append([message(10)]);
    const copying = log.snapshot(path.join(tempDir(), 'copy'));
    log.commit('g', 10n);
    await Promise.all([inFlight, copying]);
    const copyDir = path.join(dirs[1]!, 'copy');

    const copy = await openTopicLog(copyDir, () => undefined, 256);
    expect(copy.committed('g')).toBe(3n);
    expect(values(await readAll(copy, 0n))).toEqual(['m0', 'm1', 'm2', 'm3', 'm4', 'm5', 'm6', 'm7', 'm8', 'm9']);
    expect(copy.nextOffset).toBe(10n);
    await copy.close();
    expect(values(await readAll(log, 10n))).toEqual(['m10']);
    await log.close();
  });

  it('a bus copied while it runs delivers, once opened, what its groups had not committed, and keeps topics not open', async () => {
    const dir = tempDir();
    const logDir = path.join(dir, 'bus');
    // A topic written by an earlier run and not opened by this one.
    const earlier = createInProcessBus({ logDir });
    await earlier.publish('old.topic', [message(100)]);
    await earlier.close();

    const bus = createInProcessBus({ logDir });
    const handled: string[] = [];
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    await bus.subscribe('errors', 'processor', async (ms) => {
      handled.push(...values(ms));
      if (ms.some((m) => m.value.toString().startsWith('m2-'))) await held;
    });
    await bus.publish('errors', [message(1)]);
    await until(() => handled.includes('m1'));
    await bus.publish('errors', [message(2)]);
    await until(() => handled.includes('m2'));
    // m1 is committed; m2's batch is still being handled: the copy must deliver it again.
    const copyDir = path.join(tempDir(), 'bus');
    await bus.snapshot!(copyDir);
    release();
    await bus.close();

    const restored = createInProcessBus({ logDir: copyDir });
    const seen: ConsumedMessage[] = [];
    await restored.subscribe('errors', 'processor', async (ms) => void seen.push(...ms));
    const old: ConsumedMessage[] = [];
    await restored.subscribe('old.topic', 'reader', async (ms) => void old.push(...ms));
    await until(() => seen.length >= 1 && old.length >= 1);
    expect(values(seen)).toEqual(['m2']);
    expect(seen[0]!.offset).toBe('1');
    expect(values(old)).toEqual(['m100']);
    await restored.close();
  });
});

async function readAll(log: TopicLog, from: bigint): Promise<LogRecord[]> {
  const records: LogRecord[] = [];
  await log.readFrom(from, (rs) => void records.push(...rs));
  return records;
}

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 2_000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(check()).toBe(true);
}
