import { describe, expect, it } from 'vitest';
import type { Attempt } from '../../schemas/api/webhooks.ts';
import { nextAttemptNotes, receiverRule } from './webhook-text.ts';

const attempt = (deliveryId: string, n: number, over: Partial<Attempt> = {}): Attempt => ({
  deliveryId,
  eventId: `ev-${deliveryId}`,
  event: 'webhook.test',
  attempt: n,
  status: 'failed',
  responseCode: 500,
  error: 'HTTP 500',
  startedAt: '2026-11-26T10:00:00.000Z',
  finishedAt: '2026-11-26T10:00:01.000Z',
  nextAttemptAt: `2026-11-26T10:0${n}:00.000Z`,
  deliveryStatus: 'pending',
  deliveryNextAttemptAt: '2026-11-26T10:09:00.000Z',
  ...over,
});

describe('the delivery log says when the next attempt is due (issue 39 §5)', () => {
  it("only on a pending delivery's newest attempt, with the delivery's due time", () => {
    const newest = attempt('d1', 3);
    const older = [attempt('d1', 2), attempt('d1', 1)];
    const notes = nextAttemptNotes([newest, ...older], (iso) => iso.slice(11, 16));
    expect(notes.get(newest)).toBe('next 10:09');
    for (const a of older) expect(notes.has(a)).toBe(false);
  });

  it('says nothing once the delivery succeeded or died, or while it is being sent', () => {
    const rows = [
      attempt('d1', 2, { deliveryStatus: 'succeeded', deliveryNextAttemptAt: null }),
      attempt('d2', 5, { deliveryStatus: 'dead', deliveryNextAttemptAt: null }),
      attempt('d3', 1, { deliveryStatus: 'sending', deliveryNextAttemptAt: null }),
    ];
    expect(nextAttemptNotes(rows, (iso) => iso).size).toBe(0);
  });
});

describe('the URL hint follows the deployment (issue 39 §5)', () => {
  it('says loopback receivers are refused only where they are', () => {
    expect(receiverRule(false)).toMatch(/loopback hosts are refused/);
    expect(receiverRule(true)).toMatch(/loopback receivers on this development setup/);
    expect(receiverRule(true)).not.toMatch(/loopback hosts are refused/);
  });
});
