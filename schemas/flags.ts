import { hash } from 'node:crypto';
import { z } from 'zod';
import { ENVIRONMENTS, type Environment } from './error-event.ts';

/**
 * Feature flags (issue 16; the spec shows none of this): the stored shape, and evaluation, which is pure so the edge
 * evaluates from memory and an SDK can evaluate locally with the same answer.
 *
 * Evaluation of one flag for (distinctId, properties, environment):
 *   1. not enabled                                  -> disabled (enabled: false)
 *   2. conditions: the first whose environments and property filters all match decides; none matches
 *      -> no_condition_match (enabled: false). No conditions: the flag's own rollout decides.
 *   3. rollout: bucket(flagKey, distinctId) < rolloutPercentage / 100 -> rollout (enabled), else out_of_rollout
 *   4. variant (multivariate flags): by bucket(flagKey, distinctId, 'variant') over the variants' cumulative weights,
 *      unless the matched condition names one
 *
 * The bucket is PostHog's: the first 15 hex digits of SHA-1(`<flagKey>.<distinctId><salt>`) as an integer, divided
 * by 0xFFFFFFFFFFFFFFF, giving [0, 1). So it is stable per (flag key, distinctId), independent across flags, and an
 * SDK computes it with any SHA-1.
 */
export const FLAG_KEY = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,99}$/;
const LONG_SCALE = 0xfffffffffffffff;

export const PropertyFilterSchema = z.object({
  key: z.string().min(1).max(200),
  operator: z.enum(['eq', 'neq', 'in', 'not_in', 'contains', 'gt', 'lt', 'exists', 'not_exists']),
  value: z.unknown().optional(),
});
export type PropertyFilter = z.infer<typeof PropertyFilterSchema>;

export const FlagConditionSchema = z.object({
  /** Server-stamped environments this condition applies to (§7.4); none: every environment. */
  environments: z.array(z.enum(ENVIRONMENTS)).max(3).optional(),
  /** Every filter must match the caller's properties. */
  properties: z.array(PropertyFilterSchema).max(20).default([]),
  /** Overrides the flag's rollout for callers this condition matches. */
  rolloutPercentage: z.number().min(0).max(100).optional(),
  /** Serve this variant to callers this condition matches. */
  variant: z.string().min(1).max(100).optional(),
});
export type FlagCondition = z.infer<typeof FlagConditionSchema>;

export const FlagVariantSchema = z.object({ key: z.string().min(1).max(100), weight: z.number().min(0).max(100) });

export const FlagDefinitionSchema = z.object({
  key: z.string().regex(FLAG_KEY, 'letters, digits, _ . - (at most 100), starting with a letter or digit'),
  description: z.string().max(1000).default(''),
  enabled: z.boolean().default(false),
  rolloutPercentage: z.number().min(0).max(100).default(100),
  variants: z.array(FlagVariantSchema).max(20).default([]),
  /** Any JSON, returned with the flag when it is enabled (at most 16 KB). */
  payload: z.unknown().optional(),
  conditions: z.array(FlagConditionSchema).max(20).default([]),
});
export type FlagDefinition = z.infer<typeof FlagDefinitionSchema>;

/** Variant weights must add up to 100, and a condition's variant must exist. */
export function flagProblems(f: Pick<FlagDefinition, 'variants' | 'conditions' | 'payload'>): Array<{ path: string; message: string }> {
  const out: Array<{ path: string; message: string }> = [];
  if (f.variants.length) {
    const sum = f.variants.reduce((n, v) => n + v.weight, 0);
    if (Math.abs(sum - 100) > 1e-9) out.push({ path: 'variants', message: `weights add up to ${sum}, not 100` });
    if (new Set(f.variants.map((v) => v.key)).size !== f.variants.length) out.push({ path: 'variants', message: 'variant keys must be unique' });
  }
  f.conditions.forEach((c, i) => {
    if (c.variant !== undefined && !f.variants.some((v) => v.key === c.variant)) out.push({ path: `conditions.${i}.variant`, message: `no variant ${c.variant}` });
  });
  if (f.payload !== undefined && Buffer.byteLength(JSON.stringify(f.payload) ?? '') > 16 * 1024) out.push({ path: 'payload', message: 'at most 16 KB as JSON' });
  return out;
}

export function bucket(flagKey: string, distinctId: string, salt = ''): number {
  // One-shot hashing: about 3x cheaper than createHash().update().digest() for inputs this short.
  const hex = hash('sha1', `${flagKey}.${distinctId}${salt}`, 'hex').slice(0, 15);
  return parseInt(hex, 16) / LONG_SCALE;
}

export interface FlagContext {
  distinctId: string;
  properties: Record<string, unknown>;
  environment: Environment;
}

/** Why a flag answered as it did. */
export const FLAG_REASONS = ['disabled', 'no_condition_match', 'out_of_rollout', 'rollout', 'unknown_flag'] as const;
/** One flag's answer to one caller, as the edge evaluates it (GET /v1/flags/i). */
export const FlagAnswerSchema = z.object({
  enabled: z.boolean(),
  variant: z.string().nullable(),
  payload: z.unknown().describe("the flag's JSON payload when enabled, else null"),
  reason: z.enum(FLAG_REASONS),
});
export type FlagAnswer = z.infer<typeof FlagAnswerSchema>;

export const UNKNOWN_FLAG: FlagAnswer = { enabled: false, variant: null, payload: null, reason: 'unknown_flag' };

const valueText = (x: unknown): string => (typeof x === 'string' ? x : JSON.stringify(x));

function matches(filter: PropertyFilter, props: Record<string, unknown>): boolean {
  const has = Object.prototype.hasOwnProperty.call(props, filter.key);
  const v = props[filter.key];
  switch (filter.operator) {
    case 'exists':
      return has;
    case 'not_exists':
      return !has;
    case 'eq':
      return has && valueText(v) === valueText(filter.value);
    case 'neq':
      return !has || valueText(v) !== valueText(filter.value);
    case 'in':
      return has && Array.isArray(filter.value) && inList(filter.value, valueText(v));
    case 'not_in':
      return !has || !Array.isArray(filter.value) || !inList(filter.value, valueText(v));
    case 'contains':
      return has && typeof filter.value === 'string' && valueText(v).toLowerCase().includes(filter.value.toLowerCase());
    case 'gt':
    case 'lt': {
      const a = Number(v);
      const b = Number(filter.value);
      if (!has || !Number.isFinite(a) || !Number.isFinite(b)) return false;
      return filter.operator === 'gt' ? a > b : a < b;
    }
  }
}

function inList(list: unknown[], text: string): boolean {
  for (const x of list) if (valueText(x) === text) return true;
  return false;
}

function conditionMatches(c: FlagCondition, ctx: FlagContext): boolean {
  if (c.environments?.length && !c.environments.includes(ctx.environment)) return false;
  for (const f of c.properties) if (!matches(f, ctx.properties)) return false;
  return true;
}

const OFF: Record<'disabled' | 'no_condition_match' | 'out_of_rollout', FlagAnswer> = {
  disabled: { enabled: false, variant: null, payload: null, reason: 'disabled' },
  no_condition_match: { enabled: false, variant: null, payload: null, reason: 'no_condition_match' },
  out_of_rollout: { enabled: false, variant: null, payload: null, reason: 'out_of_rollout' },
};

/** Pure. Written without closures: it runs once per flag per request on the edge. */
export function evaluateFlag(flag: FlagDefinition, ctx: FlagContext): FlagAnswer {
  if (!flag.enabled) return OFF.disabled;
  let rollout = flag.rolloutPercentage;
  let variant: string | undefined;
  if (flag.conditions.length) {
    let hit: FlagCondition | undefined;
    for (const c of flag.conditions) {
      if (conditionMatches(c, ctx)) {
        hit = c;
        break;
      }
    }
    if (!hit) return OFF.no_condition_match;
    rollout = hit.rolloutPercentage ?? rollout;
    variant = hit.variant;
  }
  if (rollout < 100 && bucket(flag.key, ctx.distinctId) >= rollout / 100) return OFF.out_of_rollout;
  if (variant === undefined && flag.variants.length) {
    const b = bucket(flag.key, ctx.distinctId, 'variant') * 100;
    let edge = 0;
    variant = flag.variants[flag.variants.length - 1]!.key;
    for (const v of flag.variants) {
      edge += v.weight;
      if (b < edge) {
        variant = v.key;
        break;
      }
    }
  }
  return { enabled: true, variant: variant ?? null, payload: flag.payload ?? null, reason: 'rollout' };
}
