import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { FlagDefinitionSchema, flagProblems } from '../schemas/flags.ts';
import { bucket, evaluateFlag, type FlagContext } from './flag-evaluation.ts';

const flag = (over: Record<string, unknown>) => FlagDefinitionSchema.parse({ key: 'new-checkout', enabled: true, ...over });
const ctx = (distinctId: string, over: Partial<FlagContext> = {}): FlagContext => ({ distinctId, properties: {}, environment: 'production', ...over });

describe('flag bucketing', () => {
  it('is PostHog\'s documented hash: SHA-1 of "<key>.<distinctId><salt>", 15 hex digits over 0xFFFFFFFFFFFFFFF', () => {
    const hex = createHash('sha1').update('new-checkout.user-1').digest('hex').slice(0, 15);
    expect(bucket('new-checkout', 'user-1')).toBe(parseInt(hex, 16) / 0xfffffffffffffff);
  });

  it('puts a 30% rollout over 100,000 ids within 1% of 30%, and gives one id the same answer every time', () => {
    const f = flag({ rolloutPercentage: 30 });
    let on = 0;
    for (let i = 0; i < 100_000; i++) if (evaluateFlag(f, ctx(`user-${i}`)).enabled) on++;
    expect(Math.abs(on / 100_000 - 0.3)).toBeLessThan(0.01);
    for (let i = 0; i < 200; i++) expect(evaluateFlag(f, ctx(`user-${i}`))).toEqual(evaluateFlag(f, ctx(`user-${i}`)));
    // Independent across flags: another key puts other ids in.
    const g = flag({ key: 'other', rolloutPercentage: 30 });
    let both = 0;
    for (let i = 0; i < 10_000; i++) if (evaluateFlag(f, ctx(`u${i}`)).enabled && evaluateFlag(g, ctx(`u${i}`)).enabled) both++;
    expect(Math.abs(both / 10_000 - 0.09)).toBeLessThan(0.015);
  });

  it('splits variants by their weights', () => {
    const f = flag({
      variants: [
        { key: 'control', weight: 50 },
        { key: 'a', weight: 30 },
        { key: 'b', weight: 20 },
      ],
      payload: { color: 'green' },
    });
    const counts: Record<string, number> = {};
    for (let i = 0; i < 50_000; i++) {
      const a = evaluateFlag(f, ctx(`v${i}`));
      counts[a.variant!] = (counts[a.variant!] ?? 0) + 1;
      if (i === 0) expect(a).toMatchObject({ enabled: true, reason: 'rollout', payload: { color: 'green' } });
    }
    expect(Math.abs(counts.control! / 50_000 - 0.5)).toBeLessThan(0.01);
    expect(Math.abs(counts.a! / 50_000 - 0.3)).toBeLessThan(0.01);
    expect(Math.abs(counts.b! / 50_000 - 0.2)).toBeLessThan(0.01);
  });
});

describe('flag evaluation', () => {
  it('serves production and preview differently by condition, and properties decide within them', () => {
    const f = flag({
      rolloutPercentage: 0,
      conditions: [
        { environments: ['preview'], rolloutPercentage: 100 },
        { environments: ['production'], properties: [{ key: 'plan', operator: 'eq', value: 'pro' }], rolloutPercentage: 100 },
      ],
    });
    expect(evaluateFlag(f, ctx('x', { environment: 'preview' })).enabled).toBe(true);
    expect(evaluateFlag(f, ctx('x', { environment: 'production' }))).toMatchObject({ enabled: false, reason: 'no_condition_match' });
    expect(evaluateFlag(f, ctx('x', { environment: 'production', properties: { plan: 'pro' } })).enabled).toBe(true);
    expect(evaluateFlag(f, ctx('x', { environment: 'unknown', properties: { plan: 'pro' } })).enabled).toBe(false);
    expect(evaluateFlag({ ...f, enabled: false }, ctx('x', { environment: 'preview' })).reason).toBe('disabled');
  });

  it('knows the operators', () => {
    const on = (operator: string, value: unknown, properties: Record<string, unknown>) =>
      evaluateFlag(flag({ conditions: [{ properties: [{ key: 'p', operator, value }] }] }), ctx('x', { properties })).enabled;
    expect(on('neq', 'a', { p: 'b' })).toBe(true);
    expect(on('in', ['a', 'b'], { p: 'b' })).toBe(true);
    expect(on('not_in', ['a'], { p: 'a' })).toBe(false);
    expect(on('contains', 'EXAMPLE', { p: 'me@example.com' })).toBe(true);
    expect(on('gt', 10, { p: 11 })).toBe(true);
    expect(on('lt', 10, { p: '11' })).toBe(false);
    expect(on('exists', undefined, {})).toBe(false);
    expect(on('not_exists', undefined, {})).toBe(true);
    expect(on('eq', 3, { p: 3 })).toBe(true);
  });

  it('finds the problems a definition can have', () => {
    expect(
      flagProblems(
        flag({
          variants: [
            { key: 'a', weight: 60 },
            { key: 'b', weight: 30 },
          ],
        }),
      )[0]!.message,
    ).toMatch(/90/);
    expect(flagProblems(flag({ variants: [{ key: 'a', weight: 100 }], conditions: [{ variant: 'z' }] }))[0]!.path).toBe('conditions.0.variant');
    expect(flagProblems(flag({}))).toEqual([]);
  });
});
