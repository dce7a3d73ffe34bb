import { describe, expect, it } from 'vitest';
import { totalsOf } from './health-numbers.ts';

const zero = {
  started_u: 0,
  started_a: 0,
  crashed_u: 0,
  crashed_a: 0,
  unhandled_u: 0,
  unhandled_a: 0,
  abnormal_u: 0,
  abnormal_a: 0,
  errored_all_u: 0,
  errored_a: 0,
  users: 0,
  crashed_users: 0,
};

describe("release health's numbers", () => {
  it('errored excludes crashed and abnormal sessions; healthy is the rest; rates are 1 − bad / all', () => {
    expect(
      totalsOf({
        ...zero,
        started_u: 10,
        crashed_u: 2,
        abnormal_u: 1,
        errored_all_u: 5,
        started_a: '10',
        errored_a: 1,
        crashed_a: 1,
        users: 4,
        crashed_users: 1,
      }),
    ).toEqual({
      sessions: 20,
      crashed: 3,
      unhandled: 0,
      errored: 2 + 1,
      abnormal: 1,
      healthy: 20 - 3 - 3 - 1,
      crashFreeSessions: 1 - 3 / 20,
      users: 4,
      crashedUsers: 1,
      crashFreeUsers: 0.75,
    });
  });

  it('counts unhandled sessions (a page that went on after an uncaught error) as crashed, and names them', () => {
    // crashed_u and crashed_a already hold the unhandled ones (the repository counts crashed OR unhandled).
    expect(totalsOf({ ...zero, started_u: 10, crashed_u: 3, unhandled_u: 2, errored_all_u: 4, started_a: 10, crashed_a: 2, unhandled_a: 1 })).toMatchObject({
      sessions: 20,
      crashed: 5,
      unhandled: 3,
      errored: 1,
      crashFreeSessions: 0.75,
    });
  });

  it('null rates without sessions or users; a crash whose init was lost never makes a rate negative', () => {
    expect(totalsOf(undefined)).toMatchObject({ sessions: 0, crashFreeSessions: null, crashFreeUsers: null });
    expect(totalsOf({ ...zero, started_u: 1, crashed_u: 3, errored_all_u: 3 })).toMatchObject({ crashFreeSessions: 0, errored: 0, healthy: 0 });
  });
});
