import { PostHog } from 'posthog-node';
import { describe, expect, it } from 'vitest';
import { FlagDefinitionSchema, type FlagDefinition, type PropertyFilter } from '../schemas/flags.ts';
import { prng } from '../test/support/prng.ts';
import { evaluateFlag } from './flag-evaluation.ts';
import { localEvaluationAnswer, posthogDefinition } from './posthog-flags.ts';

/**
 * Local evaluation agrees with ours: random flags (every operator, conditions with and without rollouts and variants,
 * environments) and random callers, evaluated by posthog-node itself from the definitions we write (served from
 * memory, no network), against domain/flag-evaluation.ts in the environment a server SDK's call has (`unknown`).
 * A flag we mark for the service (ensure_experience_continuity) is never answered locally (unless disabled); every
 * answer given locally must be ours.
 */
describe('flag definitions for PostHog local evaluation', () => {
  it('answer as the edge does, for random flags and callers', async () => {
    const rnd = prng(28);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const values = ['pro', 'Pro', 'PRO', 'free', 'a.b*c', 'ÄÖ', 'äö', '5', '10', 'x@EXAMPLE.com', 'team', 'Team'];
    const filter = (): PropertyFilter => {
      const operator = pick(['eq', 'neq', 'in', 'not_in', 'contains', 'gt', 'lt', 'exists', 'not_exists'] as const);
      const key = pick(['plan', 'email', 'age']);
      const value =
        operator === 'in' || operator === 'not_in'
          ? [pick(values), pick(values)]
          : operator === 'gt' || operator === 'lt'
            ? pick([5, '7', 'abc'])
            : operator === 'contains'
              ? pick(['example', 'EX', 'ä'])
              : pick<unknown>([...values, 5, true]);
      return { key, operator, value };
    };
    const flags: FlagDefinition[] = Array.from({ length: 120 }, (_, i) => {
      const variants =
        rnd() < 0.5
          ? []
          : [
              { key: 'v1', weight: 25 },
              { key: 'v2', weight: 75 },
            ];
      return FlagDefinitionSchema.parse({
        key: `flag-${i}`,
        enabled: rnd() < 0.9,
        rolloutPercentage: pick([0, 30, 100, 100]),
        variants,
        payload: rnd() < 0.3 ? { i } : undefined,
        conditions: Array.from({ length: Math.floor(rnd() * 3) }, () => ({
          environments: rnd() < 0.2 ? [pick(['production', 'preview', 'unknown'] as const)] : undefined,
          properties: Array.from({ length: 1 + Math.floor(rnd() * 2) }, filter),
          rolloutPercentage: rnd() < 0.5 ? pick([20, 100]) : undefined,
          variant: variants.length && rnd() < 0.3 ? pick(['v1', 'v2']) : undefined,
        })),
      });
    });
    // And one flag per operator and value, a single filter on `plan`: every operator meets every kind of value.
    const OPERATORS = ['eq', 'neq', 'in', 'not_in', 'contains', 'gt', 'lt', 'exists', 'not_exists'] as const;
    for (const operator of OPERATORS)
      for (const value of [...values, 5, ['pro', 'Team'], 'RO'])
        flags.push(
          FlagDefinitionSchema.parse({ key: `${operator}-${flags.length}`, enabled: true, conditions: [{ properties: [{ key: 'plan', operator, value }] }] }),
        );
    const answer = localEvaluationAnswer(flags);
    const served: typeof fetch = async (input) => {
      const url = String(input);
      if (url.includes('/flags/definitions')) return new Response(JSON.stringify(answer), { status: 200, headers: { 'content-type': 'application/json' } });
      throw new Error(`no network in this test: ${url}`);
    };
    const ph = new PostHog('cak_live_test', { host: 'http://127.0.0.1:9', personalApiKey: 'cx_live_test', fetch: served as never, flushAt: 1000 });
    expect(await ph.waitForLocalEvaluationReady(5_000)).toBe(true);

    let local = 0;
    for (let n = 0; n < 60; n++) {
      const distinctId = `user-${n}`;
      const props: Record<string, unknown> = {};
      for (const k of ['plan', 'email', 'age']) if (rnd() < 0.8) props[k] = k === 'age' ? pick([3, 5, 9, '7', 'old']) : pick(values);
      for (const flag of flags) {
        const def = posthogDefinition(flag);
        const got = await ph.getFeatureFlag(flag.key, distinctId, { personProperties: props, onlyEvaluateLocally: true, sendFeatureFlagEvents: false });
        // A disabled flag is off everywhere; any other we mark is the service's to answer.
        if (def.ensure_experience_continuity && flag.enabled) expect(got, flag.key).toBeUndefined();
        if (got === undefined) continue; // the service's, or inconclusive (a property the caller lacks): the SDK asks the service
        local++;
        const ours = evaluateFlag(flag, { distinctId, properties: { distinct_id: distinctId, ...props }, environment: 'unknown' });
        expect({ flag: flag.key, props, got }).toEqual({ flag: flag.key, props, got: ours.enabled ? (ours.variant ?? true) : false });
      }
    }
    // The comparison reached many local answers, not only the service's.
    expect(local).toBeGreaterThan(1_200);
    await ph.shutdown();
  });
});
