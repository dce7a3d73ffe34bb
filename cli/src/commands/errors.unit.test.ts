import { describe, expect, it } from 'vitest';
import type { Issue, IssueSummary } from '../../../schemas/api/errors.ts';
import { cx } from './fake-cli.ts';

/** `cx errors list | show | resolve | ignore | reopen`: the filters as the query, the stack with the app's frames marked. */
const summary = (over: Partial<IssueSummary> = {}): IssueSummary => ({
  groupId: 'grp_1',
  id: 'grp_1',
  name: 'TypeError',
  message: 'cart is undefined',
  status: 'unresolved',
  count: 3,
  envCounts: { production: 3 },
  firstSeen: '2025-01-01T00:00:00.000Z',
  lastSeen: '2025-01-02T00:00:00.000Z',
  regressionCount: 0,
  culprit: 'checkout (src/cart.ts)',
  suggestion: null,
  ...over,
});
const page = { data: [summary(), summary({ groupId: 'grp_2', id: 'grp_2', name: 'Error', message: 'boom', count: 1 })], hasMore: false, nextCursor: null };

describe('cx errors list', () => {
  it('asks with the defaults and prints a table; --json prints the page', async () => {
    const r = await cx(['errors', 'list', '-p', 'shop'], { 'GET /projects/shop/errors?status=unresolved&sort=count&limit=25': page });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(
      'ID     STATUS      COUNT  LAST                      ISSUE\n' +
        'grp_1  unresolved  3      2025-01-02T00:00:00.000Z  TypeError: cart is undefined\n' +
        'grp_2  unresolved  1      2025-01-02T00:00:00.000Z  Error: boom\n',
    );
    const j = await cx(['errors', 'list', '-p', 'shop', '--json'], { 'GET /projects/shop/errors?status=unresolved&sort=count&limit=25': page });
    expect(JSON.parse(j.stdout)).toEqual(page);
  });

  it('passes --status, --sort, --limit and --environment on', async () => {
    const r = await cx(['errors', 'list', '-p', 'shop', '--status', 'resolved', '--sort', 'lastSeen', '--limit', '5', '--environment', 'preview'], {
      'GET /projects/shop/errors?status=resolved&sort=lastSeen&limit=5&environment=preview': { data: [], hasMore: false, nextCursor: null },
    });
    expect([r.code, r.stdout]).toEqual([0, '(none)\n']);
  });

  it('refuses a value outside the choices (exit 2) naming them, and asks nothing', async () => {
    const r = await cx(['errors', 'list', '-p', 'shop', '--status', 'nonsense']);
    expect([r.code, r.calls]).toEqual([2, []]);
    expect(r.stderr).toMatch(/argument 'nonsense' is invalid. Allowed choices are unresolved, resolved, ignored/);
    expect((await cx(['errors', 'list', '-p', 'shop', '--sort', 'age'])).code).toBe(2);
  });
});

describe('cx errors show', () => {
  const issue: Issue = {
    ...summary({ suggestion: 'check that the cart is loaded first' }),
    fingerprint: 'f',
    stack: 'TypeError: cart is undefined\n    at checkout (src/cart.ts:4:2)\n    at run (node_modules/x/index.js:1:1)\n    at node:internal/main:1:1',
    frames: null,
    minifiedStack: null,
    samples: [],
  };

  it('prints the issue, its stack with the app frames marked > and library frames indented, and the hint', async () => {
    const r = await cx(['errors', 'show', '-p', 'shop', 'grp_1'], { 'GET /projects/shop/errors/grp_1': { issue } });
    expect(r.stdout).toBe(
      [
        'TypeError: cart is undefined',
        'unresolved, 3 events, first 2025-01-01T00:00:00.000Z, last 2025-01-02T00:00:00.000Z',
        'culprit: checkout (src/cart.ts)',
        '',
        'TypeError: cart is undefined',
        '> at checkout (src/cart.ts:4:2)',
        '  at run (node_modules/x/index.js:1:1)',
        '  at node:internal/main:1:1',
        '\nhint: check that the cart is loaded first',
        '',
      ].join('\n'),
    );
    const j = await cx(['errors', 'show', '-p', 'shop', 'grp_1', '--json'], { 'GET /projects/shop/errors/grp_1': { issue } });
    expect(JSON.parse(j.stdout)).toEqual({ issue });
  });

  it('without a group id is a usage error', async () => {
    const r = await cx(['errors', 'show', '-p', 'shop']);
    expect([r.code, r.calls]).toEqual([2, []]);
    expect(r.stderr).toMatch(/missing required argument 'groupId'/);
  });
});

describe('cx errors resolve | ignore | reopen', () => {
  it('sends every id in one bulk action and counts what changed', async () => {
    const answer = { updated: [summary({ status: 'resolved' }), summary({ groupId: 'grp_2', status: 'resolved' })], skipped: [] };
    const r = await cx(['errors', 'resolve', '-p', 'shop', 'grp_1', 'grp_2'], { 'POST /projects/shop/errors/bulk': answer });
    expect(r.calls[0]!.body).toEqual({ action: 'resolve', groupIds: ['grp_1', 'grp_2'] });
    expect(r.stdout).toBe('2 issues resolved\n');
    const one = { updated: [summary()], skipped: [] };
    expect((await cx(['errors', 'ignore', '-p', 'shop', 'grp_1'], { 'POST /projects/shop/errors/bulk': one })).stdout).toBe('1 issue ignored\n');
    const reopened = await cx(['errors', 'reopen', '-p', 'shop', 'grp_1'], { 'POST /projects/shop/errors/bulk': one });
    expect([reopened.calls[0]!.body, reopened.stdout]).toEqual([{ action: 'reopen', groupIds: ['grp_1'] }, '1 issue reopened\n']);
    const j = await cx(['errors', 'resolve', '-p', 'shop', 'grp_1', '--json'], { 'POST /projects/shop/errors/bulk': one });
    expect(JSON.parse(j.stdout)).toEqual(one);
  });

  it('resolve --in-next-deploy asks the bulk route to resolve in next deploy (issue 41)', async () => {
    const one = { updated: [summary({ status: 'resolving' })], skipped: [] };
    const r = await cx(['errors', 'resolve', '-p', 'shop', 'grp_1', '--in-next-deploy'], { 'POST /projects/shop/errors/bulk': one });
    expect([r.calls[0]!.body, r.stdout]).toEqual([{ action: 'resolve', groupIds: ['grp_1'], inNextDeploy: true }, '1 issue resolving in next deploy\n']);
    expect((await cx(['errors', 'ignore', '-p', 'shop', 'grp_1', '--in-next-deploy'])).code).toBe(2);
  });

  it('ignore --for / --events / --users / --until / --until-escalating ignore each issue until that condition (issue 41)', async () => {
    const issue = { ...summary({ status: 'ignored' }), fingerprint: 'f', stack: '', frames: null, minifiedStack: null, samples: [] };
    const routes = { 'POST /projects/shop/errors/grp_1/ignore': { issue }, 'POST /projects/shop/errors/grp_2/ignore': { issue } };
    const r = await cx(['errors', 'ignore', '-p', 'shop', 'grp_1', 'grp_2', '--for', '24h'], routes);
    expect([r.calls.map((c) => c.body), r.stdout]).toEqual([[{ ignoreDuration: 1440 }, { ignoreDuration: 1440 }], '2 issues ignored for 1440 min\n']);
    expect((await cx(['errors', 'ignore', '-p', 'shop', 'grp_1', '--events', '100'], routes)).calls[0]!.body).toEqual({ ignoreCount: 100 });
    expect((await cx(['errors', 'ignore', '-p', 'shop', 'grp_1', '--users', '10'], routes)).stdout).toBe('1 issue ignored until 10 more users\n');
    expect((await cx(['errors', 'ignore', '-p', 'shop', 'grp_1', '--until-escalating'], routes)).calls[0]!.body).toEqual({ ignoreUntilEscalating: true });
    for (const bad of [
      ['--for', '3 weeks'],
      ['--events', '0'],
      ['--users', '1000001'],
      ['--for', '1h', '--events', '5'],
    ]) {
      const usage = await cx(['errors', 'ignore', '-p', 'shop', 'grp_1', ...bad], routes);
      expect([usage.code, usage.calls], bad.join(' ')).toEqual([2, []]);
    }
  });

  it('merge sends the others to the first id (issue 41)', async () => {
    const issue = { ...summary({ count: 7 }), fingerprint: 'f', stack: '', frames: null, minifiedStack: null, samples: [] };
    const r = await cx(['errors', 'merge', '-p', 'shop', 'grp_1', 'grp_2', 'grp_3'], { 'POST /projects/shop/errors/grp_1/merge': { issue } });
    expect([r.calls[0]!.body, r.stdout]).toEqual([{ groupIds: ['grp_2', 'grp_3'] }, '2 issues merged into grp_1 (7 events)\n']);
    const usage = await cx(['errors', 'merge', '-p', 'shop', 'grp_1']);
    expect([usage.code, usage.calls]).toEqual([2, []]);
  });

  it('without an id is a usage error', async () => {
    const r = await cx(['errors', 'resolve', '-p', 'shop']);
    expect([r.code, r.calls]).toEqual([2, []]);
    expect(r.stderr).toMatch(/missing required argument 'groupIds'/);
  });
});
