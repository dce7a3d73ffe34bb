import type { Queryable, RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import type { AlertRule, AlertRuleList, CreateAlertRuleBody, PatchAlertRuleBody } from '../../schemas/api/alerts.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { ErrorLevel } from '../../schemas/error-context.ts';
import type { Environment } from '../../schemas/error-event.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { type AlertRuleRow, alertRulesRepository, type StoredRule } from './alert-rules-repository.ts';

/**
 * Alert rules per project (issue 41): what the API's routes (api/alerts/) write and the processor's evaluation
 * (processor/alerts/evaluate-rules.ts) reads.
 *
 * - The default rule: a project that never wrote its rules has it, unstored: new production issues and regressions
 *   e-mail the alert recipients, at most once per issue every 6 hours (spec §7.6). The error pipeline claims it as it
 *   always did (error_groups.last_alert_at), so nothing changes for such a project.
 * - The first write (create, change or delete) stores the default rule as a rule like any other (id `default`) and
 *   marks the project's set; from then on its stored rules are all it has (deleting every rule silences alerts).
 * - Reads for evaluation go through a short cache per store (LIMITS.alertRules.cacheMs); a write drops the project's
 *   entry in this process at once (in a process of its own, a processor sees a change within the cache's time).
 */
const L = LIMITS.alertRules;

export const DEFAULT_RULE: StoredRule = {
  id: 'default',
  name: 'New production issues and regressions',
  enabled: true,
  triggers: [{ type: 'new_issue' }, { type: 'regression' }],
  environments: ['production'],
  levels: [],
  actions: { email: true, endpointIds: [] },
  throttleMinutes: L.throttleMinutes.default,
};

export function ruleOfRow(r: AlertRuleRow): AlertRule {
  return {
    id: r.id,
    name: r.name,
    enabled: r.enabled,
    default: r.id === DEFAULT_RULE.id,
    triggers: typeof r.triggers === 'string' ? JSON.parse(r.triggers) : r.triggers,
    environments: r.environments as Environment[],
    levels: r.levels as ErrorLevel[],
    actions: { email: r.email, endpointIds: r.endpoint_ids },
    throttleMinutes: Number(r.throttle_minutes),
    createdAt: new Date(r.created_at).toISOString(),
    updatedAt: new Date(r.updated_at).toISOString(),
  };
}

const unstoredDefault = (): AlertRule => ({ ...DEFAULT_RULE, default: true, createdAt: null, updatedAt: null });

/** The project's rules as the API shows them. */
export async function listAlertRules(db: Queryable, projectId: string): Promise<AlertRuleList> {
  const { customized, rows } = await alertRulesRepository.rulesOf(db, [projectId]);
  if (!customized.has(projectId)) return { rules: [unstoredDefault()], customized: false };
  return { rules: rows.map(ruleOfRow), customized: true };
}

export async function getAlertRule(db: Queryable, projectId: string, ruleId: string): Promise<AlertRule> {
  const { rules } = await listAlertRules(db, projectId);
  const rule = rules.find((r) => r.id === ruleId);
  if (!rule) throw new ServiceError('not_found', 'no such alert rule in this project');
  return rule;
}

export async function createAlertRule(db: RelationalStore, projectId: string, body: CreateAlertRuleBody, now: number): Promise<AlertRule> {
  const rule: StoredRule = { id: newId('alr_'), ...body, actions: { email: body.actions.email, endpointIds: body.actions.endpointIds } };
  return writeSet(db, projectId, now, async (tx) => {
    await checkRule(tx, projectId, rule);
    if ((await alertRulesRepository.count(tx, projectId)) >= L.perProject)
      throw new ServiceError('conflict', `a project has at most ${L.perProject} alert rules: delete one first`);
    return ruleOfRow(await alertRulesRepository.insert(tx, projectId, rule, now));
  });
}

export async function updateAlertRule(db: RelationalStore, projectId: string, ruleId: string, patch: PatchAlertRuleBody, now: number): Promise<AlertRule> {
  return writeSet(db, projectId, now, async (tx) => {
    const row = await alertRulesRepository.get(tx, projectId, ruleId);
    if (!row) throw new ServiceError('not_found', 'no such alert rule in this project');
    const was = ruleOfRow(row);
    const rule: StoredRule = {
      id: was.id,
      name: patch.name ?? was.name,
      enabled: patch.enabled ?? was.enabled,
      triggers: patch.triggers ?? was.triggers,
      environments: patch.environments ?? was.environments,
      levels: patch.levels ?? was.levels,
      actions: { email: patch.actions?.email ?? was.actions.email, endpointIds: patch.actions?.endpointIds ?? was.actions.endpointIds },
      throttleMinutes: patch.throttleMinutes ?? was.throttleMinutes,
    };
    await checkRule(tx, projectId, rule);
    return ruleOfRow((await alertRulesRepository.update(tx, projectId, rule, now))!);
  });
}

export async function deleteAlertRule(db: RelationalStore, projectId: string, ruleId: string, now: number): Promise<void> {
  await writeSet(db, projectId, now, async (tx) => {
    if (!(await alertRulesRepository.delete(tx, projectId, ruleId))) throw new ServiceError('not_found', 'no such alert rule in this project');
  });
}

/** A write in one transaction: the set locked (and the default rule stored, on the project's first write), then `fn`. */
async function writeSet<T>(db: RelationalStore, projectId: string, now: number, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  const out = await db.transaction(async (tx) => {
    if (await alertRulesRepository.lockSet(tx, projectId, now)) await alertRulesRepository.insert(tx, projectId, DEFAULT_RULE, now);
    return fn(tx);
  });
  invalidateAlertRules(db, projectId);
  return out;
}

/** A rule needs an action, and its endpoints must be the project's (another project's id answers 404, as a missing one). */
async function checkRule(tx: Queryable, projectId: string, rule: StoredRule): Promise<void> {
  if (!rule.actions.email && !rule.actions.endpointIds.length)
    throw new ServiceError('invalid_request', 'a rule needs an action: `actions.email` true or at least one of `actions.endpointIds`');
  const found = await alertRulesRepository.projectEndpoints(tx, projectId, rule.actions.endpointIds);
  const missing = rule.actions.endpointIds.find((id) => !found.has(id));
  if (missing !== undefined) throw new ServiceError('not_found', `no webhook endpoint ${JSON.stringify(missing.slice(0, 64))} in this project`);
}

/** What evaluation needs of a project: `default` (never wrote its rules: the pipeline's own §7.6 claim) or its enabled rules. */
export type ProjectRules = { kind: 'default' } | { kind: 'rules'; rules: AlertRule[] };

const caches = new WeakMap<object, Map<string, { at: number; value: ProjectRules }>>();

/** The projects' rules, from the cache when read in the last LIMITS.alertRules.cacheMs (`now` is the caller's clock). */
export async function projectRules(db: Queryable, projectIds: string[], now: number): Promise<Map<string, ProjectRules>> {
  let cache = caches.get(db);
  if (!cache) caches.set(db, (cache = new Map()));
  const out = new Map<string, ProjectRules>();
  const missing: string[] = [];
  for (const id of projectIds) {
    const hit = cache.get(id);
    if (hit && now - hit.at < L.cacheMs && now >= hit.at) out.set(id, hit.value);
    else missing.push(id);
  }
  if (!missing.length) return out;
  const { customized, rows } = await alertRulesRepository.rulesOf(db, missing);
  for (const id of missing) {
    const value: ProjectRules = customized.has(id)
      ? {
          kind: 'rules',
          rules: rows
            .filter((r) => r.project_id === id)
            .map(ruleOfRow)
            .filter((r) => r.enabled),
        }
      : { kind: 'default' };
    cache.set(id, { at: now, value });
    out.set(id, value);
  }
  // A bounded cache: entries of projects long gone from the traffic go.
  if (cache.size > 10_000) for (const [id, e] of cache) if (now - e.at >= L.cacheMs) cache.delete(id);
  return out;
}

/** Drop the project's cached rules (a write in this process). */
export function invalidateAlertRules(db: Queryable, projectId: string): void {
  caches.get(db)?.delete(projectId);
}
