import { describe, expect, it } from 'vitest';
import { createLogger } from '../../platform/logger.ts';
import { AnalyticalQueryError } from '../../platform/ports/analytical-store.ts';
import { stampErrorEvent, type StampedErrorBatch } from '../../schemas/error-event.ts';
import type { BatchSummary } from './error-pipeline.ts';
import { failsForItsContent, handleIsolatingPoison } from './poison-isolation.ts';

const logger = createLogger('silent');
const message = (ids: string[]): StampedErrorBatch => ({
  projectId: 'p',
  originHost: null,
  receivedAt: 1,
  events: ids.map((id) => stampErrorEvent({ message: 'm' }, id, 'node')),
});

/** A pipeline that stores every event once, and fails the whole call while it holds a poisoned id. */
function fakePipeline(poisoned: Set<string>, error: () => unknown) {
  const stored: string[] = [];
  let calls = 0;
  return {
    stored,
    calls: () => calls,
    async handleBatch(messages: StampedErrorBatch[]): Promise<BatchSummary> {
      calls++;
      const ids = messages.flatMap((m) => m.events.map((e) => e.eventId));
      if (ids.some((id) => poisoned.has(id))) throw error();
      const fresh = ids.filter((id) => !stored.includes(id));
      stored.push(...fresh);
      return { accepted: fresh.length, duplicates: ids.length - fresh.length, dropped: {} };
    },
  };
}

const dataError = () => Object.assign(new Error('unsupported Unicode escape sequence'), { code: '22P05' });

describe('poison isolation', () => {
  it('sets aside only the events a store refuses for their content; the rest of the batch is handled', async () => {
    const ids = Array.from({ length: 40 }, (_, i) => `e${i}`);
    const p = fakePipeline(new Set(['e7', 'e31']), dataError);
    const setAside: string[] = [];
    const summary = await handleIsolatingPoison({ pipeline: p, logger, setAside: async (b) => void setAside.push(b.events[0]!.eventId) }, [
      message(ids.slice(0, 10)),
      message(ids.slice(10)),
    ]);
    expect(summary).toEqual({ accepted: 38, duplicates: 0, dropped: { unprocessable: 2 } });
    expect(setAside.sort()).toEqual(['e31', 'e7']);
    expect(p.stored.sort()).toEqual(ids.filter((id) => id !== 'e7' && id !== 'e31').sort());
  });

  it('throws a transient failure as it is, so the bus delivers the batch again and nothing is set aside', async () => {
    for (const transient of [
      Object.assign(new Error('connection terminated'), { code: '08006' }),
      Object.assign(new Error('deadlock'), { code: '40P01' }),
      new Error('ECONNREFUSED'),
      new AnalyticalQueryError(159, 'TIMEOUT_EXCEEDED', 'slow'),
    ]) {
      const p = fakePipeline(new Set(['e1']), () => transient);
      const setAside: unknown[] = [];
      await expect(handleIsolatingPoison({ pipeline: p, logger, setAside: async (b) => void setAside.push(b) }, [message(['e0', 'e1'])])).rejects.toBe(
        transient,
      );
      expect(setAside).toEqual([]);
      expect(p.stored).toEqual([]);
    }
  });

  it('tells content failures from transient ones', () => {
    expect(failsForItsContent(Object.assign(new Error('x'), { code: '22021' }))).toBe(true);
    expect(failsForItsContent(Object.assign(new Error('x'), { code: '54000' }))).toBe(true);
    expect(failsForItsContent(new RangeError('Invalid time value'))).toBe(true);
    expect(failsForItsContent(new AnalyticalQueryError(27, 'CANNOT_PARSE_INPUT_ASSERTION_FAILED', 'bad row'))).toBe(true);
    expect(failsForItsContent(Object.assign(new Error('x'), { code: '57P01' }))).toBe(false);
    expect(failsForItsContent(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(false);
    expect(failsForItsContent(new AnalyticalQueryError(0, 'CONNECTION_FAILED', 'down'))).toBe(false);
  });
});
