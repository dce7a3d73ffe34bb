import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { AlertRule, AlertTrigger } from '../../schemas/api/alerts.ts';

/**
 * Alert rules (platform/migrations/relational/0039_alert_rules.sql): the API writes them, the processor reads them
 * (domain/alert-rules/alert-rules.ts). A project without an alert_rule_sets row never wrote its rules.
 */
export interface AlertRuleRow {
  project_id: string;
  id: string;
  name: string;
  enabled: boolean;
  triggers: AlertTrigger[];
  environments: string[];
  levels: string[];
  email: boolean;
  endpoint_ids: string[];
  throttle_minutes: number;
  created_at: Date | string;
  updated_at: Date | string;
}

/** A rule as stored, without its project. */
export type StoredRule = Omit<AlertRule, 'default' | 'createdAt' | 'updatedAt'>;

const COLS = 'project_id, id, name, enabled, triggers, environments, levels, email, endpoint_ids, throttle_minutes, created_at, updated_at';

/** A rule's columns as statement parameters $1..$11, in COLS' order (timestamps last). */
const paramsOf = (projectId: string, rule: StoredRule, now: number): unknown[] => [
  projectId,
  rule.id,
  rule.name,
  rule.enabled,
  JSON.stringify(rule.triggers),
  rule.environments,
  rule.levels,
  rule.actions.email,
  rule.actions.endpointIds,
  rule.throttleMinutes,
  new Date(now),
];

export const alertRulesRepository = {
  /** The projects among `projectIds` that wrote their rules, with every rule they hold (the default rule first, then in creation order). */
  async rulesOf(db: Queryable, projectIds: string[]): Promise<{ customized: Set<string>; rows: AlertRuleRow[] }> {
    if (!projectIds.length) return { customized: new Set(), rows: [] };
    const sets = await db.query<{ project_id: string }>('SELECT project_id FROM alert_rule_sets WHERE project_id = ANY($1::text[])', [projectIds]);
    const customized = new Set(sets.rows.map((r) => r.project_id));
    if (!customized.size) return { customized, rows: [] };
    const { rows } = await db.query<AlertRuleRow>(
      `SELECT ${COLS} FROM alert_rules WHERE project_id = ANY($1::text[]) ORDER BY id <> 'default', created_at, id`,
      [[...customized]],
    );
    return { customized, rows };
  },

  /** Lock the project's rule set (creating its mark): writes of one project queue. True when it was just created. */
  async lockSet(tx: Queryable, projectId: string, now: number): Promise<boolean> {
    const r = await tx.query<{ project_id: string }>(
      'INSERT INTO alert_rule_sets (project_id, customized_at) VALUES ($1, $2) ON CONFLICT (project_id) DO NOTHING RETURNING project_id',
      [projectId, new Date(now)],
    );
    await tx.query('SELECT project_id FROM alert_rule_sets WHERE project_id = $1 FOR UPDATE', [projectId]);
    return r.rows.length > 0;
  },

  async count(db: Queryable, projectId: string): Promise<number> {
    const r = await db.query<{ n: string | number }>('SELECT count(*) AS n FROM alert_rules WHERE project_id = $1', [projectId]);
    return Number(r.rows[0]?.n ?? 0);
  },

  async get(db: Queryable, projectId: string, id: string): Promise<AlertRuleRow | undefined> {
    const r = await db.query<AlertRuleRow>(`SELECT ${COLS} FROM alert_rules WHERE project_id = $1 AND id = $2`, [projectId, id]);
    return r.rows[0];
  },

  async insert(db: Queryable, projectId: string, rule: StoredRule, now: number): Promise<AlertRuleRow> {
    const r = await db.query<AlertRuleRow>(
      `INSERT INTO alert_rules (project_id, id, name, enabled, triggers, environments, levels, email, endpoint_ids, throttle_minutes, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6::text[], $7::text[], $8, $9::text[], $10, $11, $11) RETURNING ${COLS}`,
      paramsOf(projectId, rule, now),
    );
    return r.rows[0]!;
  },

  async update(db: Queryable, projectId: string, rule: StoredRule, now: number): Promise<AlertRuleRow | undefined> {
    const r = await db.query<AlertRuleRow>(
      `UPDATE alert_rules SET name = $3, enabled = $4, triggers = $5::jsonb, environments = $6::text[], levels = $7::text[], email = $8,
              endpoint_ids = $9::text[], throttle_minutes = $10, updated_at = $11
        WHERE project_id = $1 AND id = $2 RETURNING ${COLS}`,
      paramsOf(projectId, rule, now),
    );
    return r.rows[0];
  },

  async delete(db: Queryable, projectId: string, id: string): Promise<boolean> {
    const r = await db.query('DELETE FROM alert_rules WHERE project_id = $1 AND id = $2', [projectId, id]);
    return (r.rowCount ?? 0) > 0;
  },

  /** The ids among `ids` that are webhook endpoints of the project. */
  async projectEndpoints(db: Queryable, projectId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const r = await db.query<{ id: string }>('SELECT id FROM webhook_endpoints WHERE project_id = $1 AND id = ANY($2::text[])', [projectId, ids]);
    return new Set(r.rows.map((x) => x.id));
  },
};
