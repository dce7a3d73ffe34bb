import { beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_ITEMS_MAX, ClientItemsMessageSchema } from '../../schemas/bus/client-items.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { prng } from '../../test/support/prng.ts';
import { recordSdkEnvelopes, type SdkEnvelopes } from './fixtures/sdk-envelopes.ts';
import { sortEnvelope } from './envelope-items.ts';
import { parseEnvelope } from './sentry-envelope.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});
const ctx = { receivedAt: Date.UTC(2026, 10, 26, 12), newId: () => 'id' };

function sorted(text: string | Buffer) {
  const env = parseEnvelope(Buffer.isBuffer(text) ? text : Buffer.from(text));
  if (!env.ok) throw new Error(env.message);
  return sortEnvelope(env.header, env.items, ctx);
}
const line = (o: unknown) => JSON.stringify(o);

describe("an envelope's items sorted by kind", () => {
  it("keeps the event beside a 5 MB attachment (the real SDK's envelope), drops the attachment, and names the event's id", () => {
    const s = sorted(sdk.eventWithAttachment);
    expect(s.events).toHaveLength(1);
    expect(s.ids[0]).toMatch(/^[0-9a-f]{32}$/);
    expect([...s.kinds.keys()]).toEqual(['errors']);
    expect(s.dropped).toEqual({ item_attachment: 1 });
  });

  it("sorts the real SDK's sessions, aggregates, check-ins, feedback, user reports and client reports, with their categories", () => {
    const all = [sdk.session, sdk.sessions, sdk.checkInCrontab, sdk.feedback, sdk.userReport, sdk.clientReport]
      .map((e) => e.split('\n').slice(1).join('\n'))
      .join('\n');
    const s = sorted(`{}\n${all}`);
    expect(s.sessions).toHaveLength(1);
    expect(s.sessionAggregates).toHaveLength(2);
    expect(s.checkIns).toHaveLength(1);
    expect(s.feedback.map((f) => f.source)).toEqual(['feedback', 'user_report']);
    expect(Object.fromEntries([...s.kinds].map(([k, c]) => [k, [...c]]))).toEqual({
      sessions: ['session'],
      monitors: ['monitor'],
      feedback: ['feedback', 'default'],
    });
    expect(s.dropped).toEqual({ item_client_report: 1, sdk_discarded_ratelimit_backoff: 4, sdk_discarded_sample_rate: 1 });
  });

  it('drops an item past its own size or malformed, counted by reason, and keeps the rest', () => {
    const big = { exception: { values: [{ type: 'E', value: 'x'.repeat(LIMITS.sentryIngest.itemBytes.event) }] } };
    const s = sorted(
      [
        line({}),
        line({ type: 'event' }),
        line(big),
        line({ type: 'session' }),
        line({ sid: 'a', started: '2026-11-26T10:00:00Z', status: 'ok', errors: 0, init: true }),
        line({ type: 'session' }),
        '{nope',
        line({ type: 'transaction' }),
        line({ type: 'transaction' }),
        line({ type: 'invented' }),
        '{}',
      ].join('\n'),
    );
    expect(s.events).toHaveLength(0);
    expect(s.sessions).toHaveLength(1);
    expect(s.invalid).toBe(1);
    expect(s.dropped).toEqual({ oversize_event: 1, invalid_session: 1, item_transaction: 1, item_other: 1 });
    expect([...s.kinds.keys()]).toEqual(['sessions']);
  });

  it("holds each list to the bus message's bounds", () => {
    const session = (i: number) => [line({ type: 'session' }), line({ sid: `s${i}`, started: '2026-11-26T10:00:00Z', status: 'ok' })];
    const event = [line({ type: 'event' }), line({ message: 'm' })];
    const s = sorted([line({}), ...Array.from({ length: 99 }, (_, i) => session(i)).flat()].join('\n'));
    expect(s.sessions).toHaveLength(99);
    const many = sorted([line({}), ...Array.from({ length: 25 }, () => event).flat()].join('\n'));
    expect(many.events).toHaveLength(LIMITS.sentryIngest.maxEventsPerEnvelope);
    expect(many.dropped.events_past_limit).toBe(5);
  });

  it('never throws on arbitrary bytes or mangled real envelopes, and what it keeps always makes a valid bus message', () => {
    const rnd = prng(40);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const seeds = Object.values(sdk)
      .filter((e) => e.length < 100_000)
      .map((e) => Buffer.from(e));
    for (let i = 0; i < 2000; i++) {
      let body = Buffer.from(pick(seeds));
      const how = pick(['flip', 'cut', 'splice', 'bytes', 'repeat']);
      if (how === 'flip') for (let j = 0; j < 1 + rnd() * 8; j++) body[Math.floor(rnd() * body.length)] = Math.floor(rnd() * 256);
      else if (how === 'cut') body = body.subarray(0, Math.floor(rnd() * body.length));
      else if (how === 'splice') body = Buffer.concat([body.subarray(0, Math.floor(rnd() * body.length)), pick(seeds).subarray(Math.floor(rnd() * 100))]);
      else if (how === 'bytes') body = Buffer.from(Array.from({ length: Math.floor(rnd() * 500) }, () => Math.floor(rnd() * 256)));
      else
        body = Buffer.concat([
          body,
          Buffer.from('\n'),
          ...Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => pick(seeds).subarray(pick(seeds).indexOf(10) + 1)),
        ]);
      const env = parseEnvelope(body);
      if (!env.ok) {
        expect(typeof env.message).toBe('string');
        continue;
      }
      const s = sortEnvelope(env.header, env.items, ctx);
      expect(s.sessions.length).toBeLessThanOrEqual(CLIENT_ITEMS_MAX.sessions);
      const message = {
        v: 1,
        batchId: 'b',
        projectId: 'p',
        originHost: null,
        receivedAt: ctx.receivedAt,
        sessions: s.sessions,
        sessionAggregates: s.sessionAggregates,
        feedback: s.feedback,
        checkIns: s.checkIns,
      };
      expect(ClientItemsMessageSchema.safeParse(message).success).toBe(true);
      for (const reason of Object.keys(s.dropped)) expect(reason).toMatch(/^[a-z_]+$/);
    }
  });
});
