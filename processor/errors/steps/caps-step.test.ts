import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../../../platform/platform.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { newId } from '../../../platform/tokens.ts';
import { stampErrorEvent } from '../../../schemas/error-event.ts';
import { createIngestProject } from '../../../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../../../test/support/platform.ts';
import { createCapsStep } from './caps-step.ts';
import type { StampedEvent } from './outcome.ts';

let platform: Platform;
beforeAll(async () => {
  platform = await createTestPlatform();
});
afterAll(async () => platform.close());

const caps = { productionPerMonth: 100, previewPerMonth: 100, openGroupsPerEnvironment: 2 };

function event(projectId: string, groupId: string): StampedEvent {
  return { projectId, originHost: null, receivedAt: Date.UTC(2026, 10, 21), event: stampErrorEvent({ message: 'm' }, newId('e'), 'node'), fingerprint: groupId, groupId, environment: 'unknown' };
}

/** Runs the caps step in a transaction, with every statement it issues recorded. */
async function capsRun(events: StampedEvent[]) {
  const statements: string[] = [];
  const step = createCapsStep({ caps });
  const result = await platform.db.transaction(async (tx) => {
    const recording: Queryable = { query: (sql, params) => (statements.push(sql), tx.query(sql, params)) };
    return step(recording, events);
  });
  return { kinds: result.outcomes.map((o) => (o.kind === 'ok' ? 'ok' : o.reason)), countedOpenGroups: statements.some((s) => s.includes('jsonb_object_keys')) };
}

async function insertGroup(projectId: string, id: string) {
  await platform.db.query(
    `INSERT INTO error_groups (id, project_id, fingerprint, name, message, first_seen, last_seen, env_counts) VALUES ($1, $2, $1, 'E', 'm', now(), now(), '{"unknown": 1}')`,
    [id, projectId],
  );
}

describe('caps step: open groups', () => {
  it('counts open groups only when the batch would open a new one, and still drops past the cap', async () => {
    const p = await createIngestProject(platform, { productionDomains: [], previewDomains: [] });
    const [g1, g2] = [newId('grp_'), newId('grp_')];
    await insertGroup(p.projectId, g1);
    await insertGroup(p.projectId, g2);
    // Known groups only: no count, nothing dropped.
    expect(await capsRun([event(p.projectId, g1), event(p.projectId, g2)])).toEqual({ kinds: ['ok', 'ok'], countedOpenGroups: false });
    // A new fingerprint with two open groups already (cap 2): counted, and dropped; known groups keep counting.
    expect(await capsRun([event(p.projectId, g1), event(p.projectId, newId('grp_'))])).toEqual({ kinds: ['ok', 'open_groups_cap'], countedOpenGroups: true });
  });
});
