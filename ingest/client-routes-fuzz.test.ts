import { httpRequest } from '../test/support/http-request.ts';
import { randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dsnPublicKey } from '../platform/sentry-dsn.ts';
import type { IngestProject } from '../test/support/ingest-fixtures.ts';
import { startEdgeWithSite, type TestEdge } from '../test/support/test-edge.ts';
import { prng } from '../test/support/prng.ts';

/**
 * The clients' public routes under random input: Sentry's envelope (every kind of item) and store endpoints, `/v1/sessions/i` and a site's same-origin path,
 * the widget assets, analytics ingest and flag evaluation, and PostHog's capture, flag and config routes. Whatever arrives (keys, project numbers, hosts, bodies of any bytes, encodings, content
 * types, methods, query strings), the answer is below 500, JSON unless it is the script itself, and the edge keeps
 * answering. Seeded, so a failure reproduces.
 */
let edge: TestEdge;
let p: IngestProject;
let number: string;

beforeAll(async () => {
  ({ edge, project: p, number } = await startEdgeWithSite());
});
afterAll(async () => edge?.close());

const request = (method: string, url: string, headers: Record<string, string>, body?: Buffer) => httpRequest(edge.base, method, url, headers, body);

describe("the clients' public routes under random input", () => {
  it('never answer 5xx, answer JSON, and keep serving', async () => {
    const rnd = prng(15);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2fff))).join('');
    const ascii = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(rnd() * 93))).join('');
    const key = dsnPublicKey(p.ingestKey);
    const goodEvent = JSON.stringify({ exception: { values: [{ type: 'E', value: 'fuzz', stacktrace: { frames: [{ filename: 'a.js', lineno: 1 }] } }] } });
    const envelopes = [
      `{}\n{"type":"event"}\n${goodEvent}`,
      `{"event_id":"${'b'.repeat(32)}"}\n{"type":"event","length":${goodEvent.length}}\n${goodEvent}`,
      `{}\n{"type":"session"}\n{"sid":1}`,
      `{}\n{"type":"event","length":99999}\n{}`,
      `{}\n{"type":"event"}\n${text(50)}`,
      `{}\n{"type":"event"}\n{"exception":{"values":[{"type":${JSON.stringify(text(20))},"value":null,"stacktrace":{"frames":"nope"}}]},"user":{"id":[]},"timestamp":"x","request":{"url":7}}`,
      text(200),
      // What SDKs send beside errors (issue 40): each kind of item, well-formed or not, and several in one envelope.
      `{}\n{"type":"session"}\n{"sid":"s1","init":true,"started":"2026-11-26T10:00:00Z","status":"ok","errors":0,"attrs":{"release":"r"}}`,
      `{}\n{"type":"session"}\n{"sid":${JSON.stringify(text(20))},"started":${JSON.stringify(text(10))},"status":"unhandled","errors":1e99,"did":[]}`,
      `{}\n{"type":"sessions"}\n{"aggregates":[{"started":"2026-11-26T10:00:00Z","exited":3},{"started":7},null],"attrs":{"release":{}}}`,
      `{}\n{"type":"check_in"}\n{"check_in_id":"c","monitor_slug":"m","status":"ok","monitor_config":{"schedule":{"type":"interval","value":"x","unit":"eon"},"checkin_margin":-1}}`,
      `{}\n{"type":"feedback"}\n{"contexts":{"feedback":{"message":${JSON.stringify(text(30))},"url":7}}}`,
      `{}\n{"type":"user_report"}\n{"event_id":"e","comments":${JSON.stringify(text(30))}}`,
      `{}\n{"type":"client_report"}\n{"discarded_events":[{"reason":${JSON.stringify(text(5))},"category":"error","quantity":3}]}`,
      `{}\n{"type":"attachment","length":4}\nabcd\n{"type":"event"}\n${goodEvent}\n{"type":"session"}\n{"sid":"s2","started":"2026-11-26T10:00:00Z"}\n{"type":"transaction"}\n{}`,
    ];
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const route = pick(['envelope', 'envelope', 'store', 'site', 'widget', 'analytics', 'flags', 'posthog', 'posthog', 'sessions']);
      let raw = pick([
        Buffer.from(pick(envelopes)),
        Buffer.from(goodEvent),
        bytes(Math.floor(rnd() * 2000)),
        Buffer.alloc(0),
        Buffer.from('{"batch":[{"message":"x"}]}'),
        Buffer.from(text(300)),
      ]);
      const headers: Record<string, string> = {};
      const encoding = pick(['', '', 'gzip', 'deflate', 'br', 'x-unknown', 'gzip, gzip']);
      if (encoding) {
        headers['content-encoding'] = encoding;
        if (encoding === 'gzip' && rnd() < 0.7) raw = gzipSync(raw);
      }
      const contentType = pick(['application/json', 'text/plain;charset=UTF-8', 'application/x-sentry-envelope', '', ascii(10)]);
      if (contentType) headers['content-type'] = contentType;
      if (rnd() < 0.5)
        headers['x-sentry-auth'] = pick([
          `Sentry sentry_key=${key}, sentry_version=7`,
          `Sentry sentry_key=${ascii(20)}`,
          'Sentry',
          ascii(40),
          `sentry_key=${'0'.repeat(64)}`,
        ]);
      if (rnd() < 0.3) headers.origin = pick(['https://app.example.com', 'null', ascii(15), 'http://[::1]:1']);
      const method = pick(['POST', 'POST', 'POST', 'GET', 'HEAD', 'PUT', 'OPTIONS', 'DELETE']);
      let url: string;
      if (route === 'envelope' || route === 'store') {
        const id = pick([number, number, '0', ascii(5).replace(/[/?#%]/g, 'x'), '99999999999999999999', `${number}abc`]);
        url = `/api/${id}/${route}/${pick(['', `?sentry_key=${key}`, `?sentry_key=${encodeURIComponent(text(10))}`, '?sentry_key=%zz', '?a=b&&sentry_key'])}`;
      } else if (route === 'site') {
        headers.host = pick([
          `${p.slug}.localhost`,
          `${p.slug}.localhost:${rnd() < 0.5 ? 80 : 99999}`,
          'localhost',
          ascii(20).replace(/[/?#@\\]/g, 'x'),
          `dep-${ascii(8)}.localhost`,
        ]);
        url = '/service/v1/errors/i';
      } else if (route === 'sessions') {
        const site = rnd() < 0.4;
        if (site) headers.host = pick([`${p.slug}.localhost`, 'localhost', ascii(12).replace(/[/?#@\\]/g, 'x')]);
        else if (rnd() < 0.8) headers.authorization = `Bearer ${p.ingestKey}`;
        url = site ? '/service/v1/sessions/i' : '/v1/sessions/i';
        if (rnd() < 0.6) {
          const session = () =>
            pick<unknown>([
              { sid: text(8), init: true, status: 'ok', errors: 0, started: 1.7e12, timestamp: 1.7e12 },
              {
                sid: text(8),
                init: pick([true, 'yes']),
                status: pick(['exited', 'crashed', text(4)]),
                errors: pick([1, -1, 1.5]),
                started: pick([1e12, 'x']),
                timestamp: 1e12,
                duration: pick([3, -3]),
              },
              null,
              text(5),
            ]);
          raw = Buffer.from(
            JSON.stringify(pick<unknown>([{ sessions: Array.from({ length: Math.floor(rnd() * 4) }, session) }, { sessions: text(3) }, session()])),
          );
        }
      } else if (route === 'flags') {
        if (rnd() < 0.7) headers.authorization = `Bearer ${p.ingestKey}`;
        url = `/v1/flags/i?${pick(['distinctId=u1', `distinctId=${encodeURIComponent(text(20))}`, ''])}&${pick(['keys=a,b', `keys=${encodeURIComponent(text(30))}`, `keys=${'k,'.repeat(150)}`, ''])}&${pick(['properties=%7B%22a%22%3A1%7D', `properties=${encodeURIComponent(text(30))}`, 'properties=%zz', 'deployId=dep_x', ''])}`;
        if (rnd() < 0.3) headers['if-none-match'] = pick(['"x"', '*', ascii(30)]);
      } else if (route === 'analytics') {
        url = '/v1/analytics/i';
        if (rnd() < 0.7) headers.authorization = `Bearer ${p.ingestKey}`;
        if (rnd() < 0.5)
          raw = Buffer.from(
            JSON.stringify({
              batch: Array.from({ length: Math.floor(rnd() * 5) }, () =>
                pick<unknown>([
                  {
                    event: text(5),
                    distinctId: text(5),
                    properties: { [text(3)]: text(8) },
                    timestamp: pick([rnd() * 1e13, text(10), -1]),
                    uuid: pick([randomUUID(), text(10)]),
                  },
                  { event: 1 },
                  null,
                  text(4),
                ]),
              ),
            }),
          );
      } else if (route === 'posthog') {
        url = `${pick(['/batch/', '/e/', '/i/v0/e', '/capture/', '/flags/', '/decide/', `/array/${pick([p.ingestKey, ascii(8).replace(/[/?#%]/g, 'x')])}/config`, '/batch/x'])}${pick(['', '?v=2', '?compression=gzip-js', '?compression=base64', '?compression=lz64', `?token=${encodeURIComponent(text(8))}`, '?ip=1&_=1'])}`;
        const event = () =>
          pick<unknown>([
            {
              event: text(5),
              properties: { distinct_id: text(4), token: pick([p.ingestKey, text(6)]), $set: { a: text(3) } },
              timestamp: pick([text(8), 1e12, null]),
              uuid: pick([randomUUID(), 7]),
            },
            { event: 'e', distinct_id: pick([1, null, {}, text(3)]), offset: pick([5, 'x']) },
            null,
            [],
          ]);
        const json = pick<unknown>([
          {
            api_key: pick([p.ingestKey, text(10), 3]),
            batch: Array.from({ length: Math.floor(rnd() * 4) }, event),
            sent_at: pick([text(5), '2026-01-01T00:00:00Z']),
          },
          Array.from({ length: Math.floor(rnd() * 4) }, event),
          event(),
          {
            token: p.ingestKey,
            distinct_id: pick(['u1', 5, '', null]),
            person_properties: pick([{ plan: 'pro' }, 'x', null]),
            flag_keys: pick([['a'], 'a', null]),
          },
        ]);
        const wire = Buffer.from(JSON.stringify(json));
        raw = pick([
          wire,
          gzipSync(wire),
          Buffer.from(`data=${encodeURIComponent(wire.toString('base64'))}`),
          Buffer.from(`data=${encodeURIComponent(text(20))}`),
          raw,
        ]);
      } else url = pick(['/v1/w/cx.js', '/v1/w/cx-sessions.js', '/v1/w/manifest.json', `/v1/w/${encodeURIComponent(text(10))}`, '/v1/w/', '/v1/w/cx.0000.js']);
      const res = await request(method, url, headers, method === 'GET' || method === 'HEAD' || method === 'OPTIONS' || method === 'DELETE' ? undefined : raw);
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      expect(res.status, `${method} ${url} ${JSON.stringify(headers)} -> ${res.body}`).toBeLessThan(500);
      const isScript = res.type.startsWith('text/javascript');
      if (res.body && !isScript) expect(() => JSON.parse(res.body), `${method} ${url} -> ${res.body}`).not.toThrow();
      if (method === 'HEAD') expect(res.body, `${method} ${url}`).toBe('');
      else if (res.status >= 400) expect(typeof JSON.parse(res.body).error).toBe('string');
    }
    // The random runs reached acceptance too.
    expect((seen.get(200) ?? 0) + (seen.get(202) ?? 0)).toBeGreaterThan(0);
    expect((await fetch(`${edge.base}/v1/errors/i/health`)).status).toBe(200);
  });
});
