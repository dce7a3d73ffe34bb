import { describe, expect, it } from 'vitest';
import { AnalyticsEventSchema, type AnalyticsEventInput } from '../../schemas/analytics-event.ts';
import { breadcrumbsOf } from '../../schemas/error-context.ts';
import { ErrorEventSchema, type ErrorEventInput } from '../../schemas/error-event.ts';
import { FlagAnswerSchema, type FlagAnswer as ServiceFlagAnswer } from '../../schemas/flags.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { EDGE_PATHS } from '../../schemas/api/route-table.ts';
import { WIRE_LIMITS, WIRE_PATHS, type FlagAnswer, type WireAnalyticsEvent, type WireErrorEvent } from './wire.ts';

/**
 * The Node SDK's own copy of the wire (sdk/node/wire.ts, so the package imports nothing of the service) is the
 * service's: the same limits, and shapes the edge's schemas take. The type assignments below fail the typecheck when
 * the two drift; the parses fail the test.
 */
const asServiceError = (e: WireErrorEvent): ErrorEventInput => e;
const asServiceAnalytics = (e: WireAnalyticsEvent): AnalyticsEventInput => e;
const asSdkFlag = (a: ServiceFlagAnswer): FlagAnswer => a;

describe("the Node SDK's wire", () => {
  it("posts where the edge serves (the route table's paths)", () => {
    for (const [name, path] of Object.entries(WIRE_PATHS)) expect(path, name).toBe(EDGE_PATHS[name as keyof typeof WIRE_PATHS]);
  });

  it('has the edge limits', () => {
    expect(WIRE_LIMITS.errorBatch).toEqual({ maxEvents: LIMITS.errorBatch.maxEvents, maxBodyBytes: LIMITS.errorBatch.maxBodyBytes });
    expect(WIRE_LIMITS.analyticsBatch).toEqual({ maxEvents: LIMITS.analyticsBatch.maxEvents, maxBodyBytes: LIMITS.analyticsBatch.maxBodyBytes });
    expect(WIRE_LIMITS.sessionsBatch).toEqual({ maxSessions: LIMITS.sessionsBatch.maxSessions, maxBodyBytes: LIMITS.sessionsBatch.maxBodyBytes });
  });

  it("sends what the edge's schemas take and reads what the edge answers", () => {
    const error: WireErrorEvent = {
      name: 'TypeError',
      message: 'x',
      stack: 'at a',
      path: '/p',
      userId: 'u',
      deployId: 'd',
      gitSha: 'abc',
      extra: { a: 1 },
      debugIds: { '/app/dist/server.js': '6e926cb8-25bf-559f-a715-f5005a82bf96' },
      breadcrumbs: [{ timestamp: Date.now(), type: 'http', category: 'fetch', level: 'error', data: { method: 'GET', url: 'http://api/x', status_code: 0 } }],
      timestamp: Date.now(),
      runtime: 'node',
    };
    expect(ErrorEventSchema.safeParse(asServiceError(error)).success).toBe(true);
    // The edge keeps every field of the SDK's breadcrumbs as sent (schemas/error-context.ts).
    expect(breadcrumbsOf(error.breadcrumbs)).toEqual(error.breadcrumbs);
    const event: WireAnalyticsEvent = {
      event: 'signup',
      distinctId: 'u1',
      properties: { plan: 'pro' },
      uuid: crypto.randomUUID(),
      timestamp: Date.now(),
      deployId: 'd',
    };
    expect(AnalyticsEventSchema.safeParse(asServiceAnalytics(event)).success).toBe(true);
    const answer = FlagAnswerSchema.parse({ enabled: true, variant: 'b', payload: { x: 1 }, reason: 'rollout' });
    expect(asSdkFlag(answer).variant).toBe('b');
  });
});
