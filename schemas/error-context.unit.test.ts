import { describe, expect, it } from 'vitest';
import { breadcrumbsOf, contextsOf, eventContextOf, levelOf, requestOf, tagsOf, userOf } from './error-context.ts';
import { ErrorEventSchema, stampErrorEvent, StampedErrorEventSchema } from './error-event.ts';
import { LIMITS } from './limits.ts';

const C = LIMITS.errorContext;
const T = Date.UTC(2026, 0, 1);

describe('error context (issue 40): cut, never refused', () => {
  it('keeps the newest breadcrumbs, oldest first, from an array or Sentry values; drops those without a time', () => {
    const crumbs = Array.from({ length: 150 }, (_, i) => ({ timestamp: T + i, message: `m${i}` }));
    const kept = breadcrumbsOf(crumbs)!;
    expect(kept).toHaveLength(C.breadcrumbs);
    expect(kept[0]!.message).toBe('m50');
    expect(kept.at(-1)!.message).toBe('m149');
    expect(breadcrumbsOf({ values: [{ timestamp: '2026-01-01T00:00:00Z', message: 'a' }, { message: 'no time' }, 'junk'] })).toEqual([
      { timestamp: T, message: 'a' },
    ]);
    expect(breadcrumbsOf('x')).toBeUndefined();
    expect(breadcrumbsOf([])).toBeUndefined();
  });

  it('cuts each breadcrumb: names, message, level, flat data (nested as JSON, cut), and the total size', () => {
    const [b] = breadcrumbsOf([
      {
        timestamp: T,
        type: 't'.repeat(500),
        category: 'ui.click',
        level: 'WARN',
        message: 'm'.repeat(5000),
        data: {
          url: 'u'.repeat(2000),
          status: 200,
          nested: { a: [1, 2] },
          ok: true,
          gone: undefined,
          ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])),
        },
      },
    ])!;
    expect(b!.type).toHaveLength(C.breadcrumbName);
    expect(b!.message).toHaveLength(C.breadcrumbMessage);
    expect(b!.level).toBe('warning');
    expect(b!.data!.url).toHaveLength(C.breadcrumbDataValue);
    expect(b!.data!.nested).toBe('{"a":[1,2]}');
    expect(Object.keys(b!.data!)).toHaveLength(C.breadcrumbDataKeys);
    const big = Array.from({ length: 100 }, (_, i) => ({ timestamp: T + i, message: 'x'.repeat(1000) }));
    const kept = breadcrumbsOf(big)!;
    expect(kept.length).toBeLessThan(100);
    expect(kept.at(-1)!.timestamp).toBe(T + 99);
    expect(kept.reduce((n, k) => n + k.message!.length, 0)).toBeLessThanOrEqual(C.breadcrumbChars);
  });

  it('keeps tags with valid keys as strings, the first 50, from an object or pairs', () => {
    expect(tagsOf({ a: 'x', n: 3, b: true, o: { x: 1 }, 'bad key': 'x', ['k'.repeat(40)]: 'x', v: 'v'.repeat(300) })).toEqual({
      a: 'x',
      n: '3',
      b: 'true',
      v: 'v'.repeat(C.tagValue),
    });
    expect(tagsOf([['a', 'x'], ['b', 2], 'junk'])).toEqual({ a: 'x', b: '2' });
    expect(Object.keys(tagsOf(Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`t${i}`, 'v'])))!)).toHaveLength(C.tags);
    expect(tagsOf(JSON.parse('{"__proto__":"x"}'))).toBeUndefined();
  });

  it('keeps contexts flat and bounded', () => {
    const c = contextsOf({
      browser: { name: 'Chrome', version: '120', deep: { a: 1 } },
      junk: 5,
      empty: {},
      ...Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`c${i}`, { a: i }])),
    })!;
    expect(c.browser).toEqual({ name: 'Chrome', version: '120', deep: '{"a":1}' });
    expect(c.junk).toBeUndefined();
    expect(Object.keys(c)).toHaveLength(C.contexts);
  });

  it('keeps only allowed request headers, lower-cased', () => {
    expect(
      requestOf({ url: 'https://a.example/p?q=1', method: 'post', headers: { 'User-Agent': 'UA', Cookie: 'sid=1', Authorization: 'Bearer x', Referer: 'r' } }),
    ).toEqual({
      url: 'https://a.example/p?q=1',
      method: 'POST',
      headers: { 'user-agent': 'UA', referer: 'r' },
    });
    expect(requestOf({ headers: { cookie: 'x' } })).toBeUndefined();
  });

  it('keeps a user id, e-mail, username and a literal IP (not {{auto}})', () => {
    expect(userOf({ id: 42, email: 'a@b.example', ip_address: '{{auto}}', username: 'ann', segment: 'x' })).toEqual({
      id: '42',
      email: 'a@b.example',
      username: 'ann',
    });
    expect(userOf({ ipAddress: '203.0.113.9' })).toEqual({ ipAddress: '203.0.113.9' });
    expect(userOf({ ip_address: '2001:db8::1' })).toEqual({ ipAddress: '2001:db8::1' });
    expect(userOf({ ip_address: '999.1.1.1' })).toBeUndefined();
  });

  it('maps levels and leaves out unknown ones', () => {
    expect(levelOf('error')).toBe('error');
    expect(levelOf('critical')).toBe('fatal');
    expect(levelOf('loud')).toBeUndefined();
    expect(levelOf(3)).toBeUndefined();
  });

  it('an event with none of the fields has no context; wrong types are left out, never refused', () => {
    expect(eventContextOf({})).toBeUndefined();
    expect(eventContextOf({ tags: 5, level: {}, breadcrumbs: 'x' })).toBeUndefined();
    const e = ErrorEventSchema.parse({
      message: 'm',
      tags: 'x',
      user: [1],
      release: 'r'.repeat(500),
      environment: 'staging',
      serverName: 'web-1',
      dist: 'd',
      sdk: { name: 'cx.js', version: '1' },
    });
    expect(stampErrorEvent(e, 'id', 'browser').context).toEqual({
      release: 'r'.repeat(C.release),
      clientEnvironment: 'staging',
      serverName: 'web-1',
      dist: 'd',
      sdk: { name: 'cx.js', version: '1' },
    });
  });

  it("holds another producer's stamped context to the same bounds", () => {
    const r = StampedErrorEventSchema.parse({
      eventId: 'e',
      message: 'm',
      context: {
        tags: Object.fromEntries(Array.from({ length: 80 }, (_, i) => [`t${i}`, 'v'])),
        clientEnvironment: 'staging',
        user: { ipAddress: 'nope', id: 'u' },
      },
    });
    expect(Object.keys(r.context!.tags!)).toHaveLength(C.tags);
    expect(r.context!.clientEnvironment).toBe('staging');
    expect(r.context!.user).toEqual({ id: 'u' });
  });
});

describe('error context: hostile input stays bounded', () => {
  /** A random JSON value from a seeded generator (deterministic): nested objects, arrays, long strings, odd keys. */
  function randomJson(seed: number) {
    let s = seed;
    const rnd = () => (s = (s * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const gen = (depth: number): unknown => {
      const r = rnd();
      if (depth > 3 || r < 0.3) return [1e308, -0, 'x'.repeat(Math.floor(rnd() * 3000)), true, null, '__proto__', 1_700_000_000_000][Math.floor(rnd() * 7)];
      if (r < 0.6) return Array.from({ length: depth === 0 ? Math.floor(rnd() * 150) : Math.floor(rnd() * 6) }, () => gen(depth + 1));
      return Object.fromEntries(
        Array.from({ length: depth === 0 ? Math.floor(rnd() * 80) : Math.floor(rnd() * 8) }, (_, i) => [
          ['__proto__', 'constructor', `k${i}`, 'timestamp', 'message', 'data'][i % 6]!,
          gen(depth + 1),
        ]),
      );
    };
    return gen(0);
  }

  it('never throws, and every part is within its bound, for 300 random inputs per field', () => {
    const fields = ['breadcrumbs', 'level', 'tags', 'contexts', 'request', 'user', 'release', 'dist', 'serverName', 'sdk', 'environment'] as const;
    for (let seed = 1; seed <= 300; seed++) {
      const input = Object.fromEntries(fields.map((f, i) => [f, randomJson(seed * 31 + i)]));
      const c = eventContextOf(input);
      if (!c) continue;
      expect(c.breadcrumbs?.length ?? 0).toBeLessThanOrEqual(C.breadcrumbs);
      expect(Object.keys(c.tags ?? {}).length).toBeLessThanOrEqual(C.tags);
      expect(Object.keys(c.contexts ?? {}).length).toBeLessThanOrEqual(C.contexts);
      // Everything kept serialises within a bound a store takes (breadcrumbs 32K characters, the rest far less).
      expect(JSON.stringify(c).length).toBeLessThan(200_000);
      expect(Object.getPrototypeOf(c.tags ?? {})).toBe(Object.prototype);
    }
  });
});
