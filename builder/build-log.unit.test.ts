import { describe, expect, it } from 'vitest';
import type { AnalyticalStore } from '../platform/ports/analytical-store.ts';
import { createBuildLog } from './build-log.ts';

/** Row 8 of issue 22: one 30 MB line without a newline used to be re-joined and split on every chunk. */
function fakeStore() {
  const rows: Array<{ seq: number; stream: string; line: string }> = [];
  const store = {
    insert: async (_table: string, r: Array<{ seq: number; stream: string; line: string }>) => void rows.push(...r),
  } as unknown as AnalyticalStore;
  return { store, rows };
}

describe('build log lines are cut at their cap as they stream', () => {
  it('a 30 MB line with no newline holds at most the cap, is stored once, cut, and the next line is whole', async () => {
    const { store, rows } = fakeStore();
    const log = createBuildLog({ analytics: store, projectId: 'prj_x', deployId: 'dep_x', secrets: [], now: () => 0, maxLines: 100, maxLineChars: 4_000 });
    const chunk = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 480; i++) {
      log.write('stdout', chunk);
      expect(log.held).toBeLessThanOrEqual(4_001);
    }
    log.write('stdout', 'tail of the long line\nnext line\npartial');
    await log.close();
    expect(rows.map((r) => r.line.length > 4_000)).toEqual([true, false, false]);
    expect(rows[0]!.line).toContain('[line cut at 4000 characters]');
    expect(rows[1]!.line).toBe('next line');
    expect(rows[2]!.line).toBe('partial');
  });

  it('lines split across chunks are joined; a line exactly at the cap is not cut', async () => {
    const { store, rows } = fakeStore();
    const log = createBuildLog({ analytics: store, projectId: 'prj_x', deployId: 'dep_x', secrets: [], now: () => 0, maxLines: 100, maxLineChars: 10 });
    log.write('stdout', 'abc');
    log.write('stdout', 'def\n0123456789');
    log.write('stdout', '\n01234567890123\nend');
    await log.close();
    expect(rows.map((r) => r.line)).toEqual(['abcdef', '0123456789', '0123456789 [line cut at 10 characters]', 'end']);
  });
});
