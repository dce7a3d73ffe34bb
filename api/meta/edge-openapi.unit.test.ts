import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AnalyticsAcceptedAnswer, EDGE_ROUTES, FlagsAnswer, IngestedAnswer, type EdgeRouteName } from '../../schemas/api/edge.ts';
import { REFUSAL_REASONS } from '../../schemas/edge-refusals.ts';
import { FlagDefinitionSchema } from '../../schemas/flags.ts';
import { flagsAnswer, parseFlagQuery } from '../../ingest/flags-route.ts';
import { analyticsRoute, parseAnalyticsBatch } from '../../ingest/analytics-route.ts';
import { edgeOpenApiPaths } from './edge-openapi.ts';

/**
 * The edge's contract (schemas/api/edge.ts) is what its code does: each route lists exactly the refusals the steps it
 * is built from can produce, and its answers parse with the contract's schemas. The OpenAPI document is written from
 * the same table.
 */
const BATCH = ['admission', 'batch-route'];
// A flags handler that throws is answered 500 internal by the guard every handler runs in (http/guarded-app.ts).
const FLAGS = ['flags-route', 'http/guarded-app'];
const POSTHOG_CAPTURE = ['posthog/posthog-capture', 'posthog/posthog-body'];
const STEPS: Record<EdgeRouteName, string[]> = {
  errors: [...BATCH, 'errors-route'],
  siteErrors: [...BATCH, 'errors-route', 'site-key'],
  sentryEnvelope: [...BATCH, 'errors-route', 'sentry/sentry-routes', 'sentry/envelope-take', 'sentry/sentry-body', 'sentry/sentry-batch', 'http/body-budget'],
  sentryStore: [...BATCH, 'errors-route', 'sentry/sentry-routes', 'sentry/sentry-body', 'sentry/sentry-batch'],
  sessions: [...BATCH, 'sessions-route'],
  siteSessions: [...BATCH, 'sessions-route', 'site-key'],
  sentryCron: ['admission', 'sentry/sentry-cron-route'],
  analytics: [...BATCH, 'analytics-route'],
  siteAnalytics: [...BATCH, 'analytics-route', 'site-key'],
  flags: FLAGS,
  siteFlags: [...FLAGS, 'site-key'],
  widget: [],
  widgetSessions: [],
  posthogBatch: [...BATCH, 'analytics-route', ...POSTHOG_CAPTURE],
  posthogEvents: [...BATCH, 'analytics-route', ...POSTHOG_CAPTURE],
  posthogEventsV0: [...BATCH, 'analytics-route', ...POSTHOG_CAPTURE],
  posthogCapture: [...BATCH, 'analytics-route', ...POSTHOG_CAPTURE],
  posthogFlags: ['posthog/posthog-flags-route', 'posthog/posthog-body', 'flags-route'],
  posthogDecide: ['posthog/posthog-flags-route', 'posthog/posthog-body', 'flags-route'],
  posthogConfig: [],
  posthogConfigScript: [],
  posthogStatic: [],
  posthogStaticVersioned: [],
};

function refusalsIn(step: string): string[] {
  const text = readFileSync(new URL(`../../ingest/${step}.ts`, import.meta.url), 'utf8');
  const found = [...text.matchAll(/refusal\('([a-z_]+)'/g)].map((m) => m[1]!);
  if (step === 'http/guarded-app') found.push('internal');
  return found;
}

describe('the edge contract', () => {
  it('lists for each route exactly the refusals its steps can produce', () => {
    expect([...new Set(EDGE_ROUTES.map((r) => r.name))].sort()).toEqual(Object.keys(STEPS).sort());
    for (const route of EDGE_ROUTES) {
      const produced = new Set(STEPS[route.name].flatMap(refusalsIn));
      expect({ route: route.name, refusals: [...new Set(route.refusals)].sort() }).toEqual({ route: route.name, refusals: [...produced].sort() });
    }
    // and every reason of the refusal table is some route's
    const listed = new Set(EDGE_ROUTES.flatMap((r) => r.refusals));
    expect(REFUSAL_REASONS.filter((r) => !listed.has(r))).toEqual([]);
  });

  it('documents each refusal under the status its code answers with', () => {
    const errors = (edgeOpenApiPaths()['/v1/errors/i'] as { post: { responses: Record<string, { description: string }> } }).post.responses;
    expect(errors['429']!.description).toMatch(/rate_limited/);
    expect(errors['429']!.description).toMatch(/errors_capped/);
    expect(errors['413']!.description).toMatch(/payload_too_large/);
    expect(errors['503']!.description).toMatch(/unavailable/);
    expect(errors['204']!.description).toMatch(/paused/);
    const sentry = (edgeOpenApiPaths()['/api/{projectId}/envelope/'] as { post: { responses: Record<string, { description: string }> } }).post.responses;
    expect(sentry['403']!.description).toMatch(/project mismatch/);
    expect(sentry['415']!.description).toMatch(/unsupported encoding/);
  });

  it("answers flags in the contract's shape", () => {
    const flags = new Map([
      ['on', FlagDefinitionSchema.parse({ key: 'on', enabled: true, payload: { a: [1] }, variants: [{ key: 'x', weight: 100 }] })],
      ['off', FlagDefinitionSchema.parse({ key: 'off', enabled: false })],
    ]);
    const q = parseFlagQuery('distinctId=u1&keys=on,off,missing');
    if ('reason' in q) throw new Error(q.message);
    const { body } = flagsAnswer(flags, q, 'production');
    const parsed = FlagsAnswer.parse(JSON.parse(body));
    expect(parsed.flags.on).toEqual({ enabled: true, variant: 'x', payload: { a: [1] }, reason: 'rollout' });
    expect(parsed.flags.off!.reason).toBe('disabled');
    expect(parsed.flags.missing!.reason).toBe('unknown_flag');
  });

  it("answers an analytics batch in the contract's shape, naming the events it dropped", () => {
    const route = analyticsRoute({ now: () => Date.UTC(2026, 0, 1), publish: async () => {} });
    const body = Buffer.from(JSON.stringify({ batch: [{ event: 'signup', distinctId: 'u1' }, { event: '' }] }));
    const parsed = parseAnalyticsBatch(body, { projectId: 'prj_1', originHost: null, receivedAt: Date.UTC(2026, 0, 1) });
    if (!('ok' in parsed)) throw new Error(parsed.message);
    const answer = AnalyticsAcceptedAnswer.parse(JSON.parse(route.dialect!.acceptedReply!(parsed).body));
    expect(answer.ingested).toBe(1);
    expect(answer.rejected.map((r) => r.index)).toEqual([1]);
    expect(IngestedAnswer.parse({ ingested: answer.ingested })).toEqual({ ingested: 1 });
  });
});
