import { describe, expect, it } from 'vitest';
import { fitOutput, quotaMessage } from './output-quota.ts';

/** Which kept outputs a new one releases (output-quota.ts, step 3): oldest first, this project's before the account's others'. */
const limits = { projectBytes: 10, accountBytes: 20 };
const out = (id: string, projectId: string, bytes: number, releasable = true) => ({ id, projectId, bytes, releasable });

describe('fitOutput', () => {
  it('releases nothing while the output fits', () => {
    expect(fitOutput([out('a1', 'A', 4)], 'A', 6, limits)).toEqual({ ok: true, release: [] });
  });

  it("over the project's limit: this project's oldest releasable outputs, only as many as needed; never another project's", () => {
    const kept = [out('b1', 'B', 5), out('a1', 'A', 3), out('a2', 'A', 3, false), out('a3', 'A', 3)];
    expect(fitOutput(kept, 'A', 3, limits)).toEqual({ ok: true, release: ['a1'] });
    // Live outputs hold the room: 3 live + 8 new is over 10 whatever is released.
    expect(fitOutput(kept, 'A', 8, limits)).toEqual({ ok: false, limit: 'project', heldBytes: 3 });
  });

  it("over the account's limit: this project's first, then the account's other projects' oldest", () => {
    const kept = [out('b1', 'B', 6), out('c1', 'C', 6, false), out('a1', 'A', 2), out('b2', 'B', 6, false)];
    expect(fitOutput(kept, 'A', 5, limits)).toEqual({ ok: true, release: ['a1', 'b1'] });
    expect(fitOutput(kept, 'A', 9, limits)).toEqual({ ok: false, limit: 'account', heldBytes: 12 });
  });

  it('a refused output releases nothing, and outputs of unknown size are never released for room', () => {
    const kept = [out('a0', 'A', 0), out('a1', 'A', 4, false)];
    expect(fitOutput(kept, 'A', 7, limits)).toEqual({ ok: false, limit: 'project', heldBytes: 4 });
  });
});

describe('quotaMessage', () => {
  it('names the limit', () => {
    const MB = 1024 * 1024;
    expect(quotaMessage('project', 9 * MB, 0, { projectBytes: 8 * MB, accountBytes: 12 * MB })).toContain('ARTIFACTS_PROJECT_MAX_MB');
    expect(quotaMessage('account', 9 * MB, 3 * MB, { projectBytes: 8 * MB, accountBytes: 12 * MB })).toMatch(
      /12 MB .*ARTIFACTS_ACCOUNT_MAX_MB.*3\.0 MB of it is held/,
    );
  });
});
