import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../../../platform/platform.ts';
import { newId } from '../../../platform/tokens.ts';
import { stampErrorEvent } from '../../../schemas/error-event.ts';
import { createIngestProject } from '../../../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../../../test/support/platform.ts';
import { groupsRepository } from '../repositories/groups-repository.ts';
import { usageRepository } from '../repositories/usage-repository.ts';
import { createCapsStep, usageBucketOf } from './caps-step.ts';
import type { EnvironmentStampedEvent } from './outcome.ts';

let platform: Platform;
beforeAll(async () => {
  platform = await createTestPlatform();
});
afterAll(async () => platform.close());

const caps = { productionPerMonth: 100, previewPerMonth: 100, openGroupsPerEnvironment: 2 };

function event(projectId: string, groupId: string): EnvironmentStampedEvent {
  return {
    projectId,
    originHost: null,
    receivedAt: Date.UTC(2026, 10, 21),
    event: stampErrorEvent({ message: 'm' }, newId('e'), 'node'),
    fingerprint: groupId,
    groupId,
    environment: 'unknown',
  };
}

/** Runs the caps step in a transaction, as the pipeline does (usage rows and existing groups locked first). */
async function capsRun(events: EnvironmentStampedEvent[]) {
  const step = createCapsStep({ caps, usage: usageRepository, groups: groupsRepository });
  const outcomes = await platform.db.transaction(async (tx) => {
    const acceptedSoFar = await usageRepository.lock(tx, events.map(usageBucketOf));
    return step(tx, events, {
      acceptedSoFar,
      prior: await groupsRepository.lockPrior(
        tx,
        events.map((e) => e.groupId),
      ),
    });
  });
  return outcomes.map((o) => (o.kind === 'ok' ? 'ok' : o.reason));
}

async function insertGroup(projectId: string, id: string) {
  await platform.db.query(
    `INSERT INTO error_groups (id, project_id, fingerprint, name, message, first_seen, last_seen, env_counts) VALUES ($1, $2, $1, 'E', 'm', now(), now(), '{"unknown": 1}')`,
    [id, projectId],
  );
}

describe('caps step: open groups', () => {
  it('lets occurrences of existing groups through at the cap, and drops a new fingerprint past it', async () => {
    const p = await createIngestProject(platform, { productionDomains: [], previewDomains: [] });
    const [g1, g2] = [newId('grp_'), newId('grp_')];
    await insertGroup(p.projectId, g1);
    await insertGroup(p.projectId, g2);
    // Known groups only: nothing dropped.
    expect(await capsRun([event(p.projectId, g1), event(p.projectId, g2)])).toEqual(['ok', 'ok']);
    // A new fingerprint with two open groups already (cap 2): dropped; known groups keep counting.
    expect(await capsRun([event(p.projectId, g1), event(p.projectId, newId('grp_'))])).toEqual(['ok', 'open_groups_cap']);
    // Two new fingerprints in another project with one slot left: the first opens, the second is dropped,
    // and a second occurrence of the first counts.
    const q = await createIngestProject(platform, { productionDomains: [], previewDomains: [] });
    await insertGroup(q.projectId, newId('grp_'));
    const [n1, n2] = [newId('grp_'), newId('grp_')];
    expect(await capsRun([event(q.projectId, n1), event(q.projectId, n2), event(q.projectId, n1)])).toEqual(['ok', 'open_groups_cap', 'ok']);
  });
});
