import { envelopeItemTypeToDataCategory, isRateLimited, updateRateLimits, type EnvelopeItemType } from '@sentry/core';
import { describe, expect, it } from 'vitest';
import { DATA_CATEGORY_OVERRIDES, dataCategoryOf, KIND_OF_TYPE, UNKEPT_TYPES } from './envelope-items.ts';
import { categoriesOfLimited, rateLimitsHeader, UNKEPT_HEADER, UNKEPT_LIMIT } from './envelope-limits.ts';

/**
 * What the real SDK does with our answers: @sentry/core's own updateRateLimits (the transport calls it on every
 * answer) and isRateLimited (asked per item before each send, by the item type's category) on the headers we write.
 */
const NOW = 1_000_000_000;
const ALL_TYPES = [...new Set([...Object.keys(KIND_OF_TYPE), ...UNKEPT_TYPES, ...Object.keys(DATA_CATEGORY_OVERRIDES), 'attachment', 'client_report'])];

/** The item types the SDK would still send after an answer with this header and status. */
function stillSent(header: string | null, statusCode: number, at = NOW + 1000): string[] {
  const limits = updateRateLimits({}, { statusCode, headers: { 'x-sentry-rate-limits': header, 'retry-after': '60' } }, NOW);
  return ALL_TYPES.filter((t) => !isRateLimited(limits, envelopeItemTypeToDataCategory(t as EnvelopeItemType), at)).sort();
}
const kept = (types: string[]) => ALL_TYPES.filter((t) => !types.includes(t)).sort();

describe("X-Sentry-Rate-Limits, read by @sentry/core's own parser", () => {
  it("files each item type under the SDK's own category", () => {
    for (const type of ALL_TYPES) expect(dataCategoryOf(type), type).toBe(envelopeItemTypeToDataCategory(type as EnvelopeItemType));
  });

  it('the never-kept types stop for a day, and nothing else does (client reports, sessions, events, attachments go on)', () => {
    expect(stillSent(UNKEPT_HEADER, 200)).toEqual(kept([...UNKEPT_TYPES]));
    expect(stillSent(UNKEPT_HEADER, 200, NOW + UNKEPT_LIMIT.retryAfterSec * 1000 - 1)).toEqual(kept([...UNKEPT_TYPES]));
    expect(stillSent(UNKEPT_HEADER, 200, NOW + UNKEPT_LIMIT.retryAfterSec * 1000 + 1)).toEqual([...ALL_TYPES].sort());
  });

  it('a limited error budget stops events (and user reports, category default) only: sessions, check-ins and feedback go on', () => {
    const header = rateLimitsHeader([
      { retryAfterSec: 60, categories: categoriesOfLimited('errors', ['error']), scope: 'key', reason: 'rate_limited' },
      UNKEPT_LIMIT,
    ]);
    expect(header).toMatch(/^60:error;default:key:rate_limited, 86400:/);
    expect(stillSent(header, 429)).toEqual(kept([...UNKEPT_TYPES, 'event', 'user_report']));
    expect(stillSent(header, 429, NOW + 61_000)).toEqual(kept([...UNKEPT_TYPES]));
  });

  it('limited sessions stop sessions only; the cap names the project; several limits in one header', () => {
    const sessions = { retryAfterSec: 30, categories: categoriesOfLimited('sessions', ['session']), scope: 'key' as const, reason: 'rate_limited' };
    expect(stillSent(rateLimitsHeader([sessions, UNKEPT_LIMIT]), 429)).toEqual(kept([...UNKEPT_TYPES, 'session', 'sessions']));
    const capped = { retryAfterSec: 3600, categories: categoriesOfLimited('errors', ['error']), scope: 'project' as const, reason: 'usage_exceeded' };
    const both = rateLimitsHeader([capped, sessions, UNKEPT_LIMIT]);
    expect(both).toMatch(/^3600:error;default:project:usage_exceeded, 30:session:key:rate_limited, /);
    expect(stillSent(both, 200)).toEqual(kept([...UNKEPT_TYPES, 'event', 'user_report', 'session', 'sessions']));
    const monitors = rateLimitsHeader([{ retryAfterSec: 5, categories: categoriesOfLimited('monitors', ['monitor']), scope: 'key', reason: 'rate_limited' }]);
    expect(stillSent(monitors, 429)).toEqual(kept(['check_in']));
    const feedback = rateLimitsHeader([{ retryAfterSec: 5, categories: categoriesOfLimited('feedback', ['feedback']), scope: 'key', reason: 'rate_limited' }]);
    expect(stillSent(feedback, 429)).toEqual(kept(['feedback']));
  });

  it('the old answer, an empty category list, stopped everything (why every limit here names its categories)', () => {
    expect(stillSent('60::key:rate_limited', 429)).toEqual([]);
  });
});
