import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi } from '../test/support/accounts.ts';

/** Issue 23, "Routing before body checks": an unknown route is 404 `not_found` whatever its body. */
let t: Awaited<ReturnType<typeof buildTestApi>>;
beforeAll(async () => {
  t = await buildTestApi();
});
afterAll(async () => t?.close());

describe('routing comes before the body', () => {
  it('answers 404 for an unknown route with a gzip, malformed, non-UTF-8 or foreign body', async () => {
    const bodies: Array<[string, Buffer]> = [
      ['application/json', gzipSync(Buffer.from('{"batch":[]}'))],
      ['application/json', Buffer.from('{"a":')],
      ['application/json', Buffer.from([0xff, 0xfe, 0x00])],
      ['application/json', Buffer.from(`{"a":${'['.repeat(5000)}`)],
      ['text/plain', Buffer.from('x')],
      ['application/x-www-form-urlencoded', Buffer.from('data=eyJ9')],
    ];
    for (const url of ['/v1/nope', '/batch/', '/e/', '/flags/?v=2']) {
      for (const [type, payload] of bodies) {
        const res = await t.app.inject({ method: 'POST', url, headers: { 'content-type': type, 'content-encoding': 'gzip' }, payload });
        expect(res.statusCode, `${url} ${type}`).toBe(404);
        expect(res.json().error).toBe('not_found');
      }
    }
  });

  it('still checks the body of a known route', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/auth/sign-in',
      headers: { 'content-type': 'application/json' },
      payload: Buffer.from([0xff, 0xfe]),
    });
    expect(res.statusCode).toBe(400);
  });
});
