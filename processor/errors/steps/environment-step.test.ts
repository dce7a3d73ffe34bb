import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../platform/clock.ts';
import type { Platform } from '../../../platform/platform.ts';
import { newId } from '../../../platform/tokens.ts';
import { stampErrorEvent } from '../../../schemas/error-event.ts';
import { createIngestProject } from '../../../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../../../test/support/platform.ts';
import { createEnvironmentStep, DOMAINS_TTL_MS } from './environment-step.ts';
import type { FingerprintedEvent } from './outcome.ts';

let platform: Platform;
beforeAll(async () => {
  platform = await createTestPlatform();
});
afterAll(async () => platform.close());

function event(projectId: string, originHost: string | null, extra: { deployId?: string } = {}): FingerprintedEvent {
  return { projectId, originHost, receivedAt: 0, event: stampErrorEvent({ message: 'm', ...extra }, newId('e'), 'browser'), fingerprint: 'f', groupId: 'g' };
}

describe('environment step', () => {
  it('applies a change of project domains once the cached copy is older than its TTL', async () => {
    const clock = new ManualClock();
    const step = createEnvironmentStep({ db: platform.db, clock });
    const p = await createIngestProject(platform, { productionDomains: ['old.example.com'], previewDomains: [] });
    const envOf = async (host: string) => {
      const [o] = await step([event(p.projectId, host)]);
      return o.kind === 'ok' ? o.value.environment : o.reason;
    };
    expect(await envOf('old.example.com')).toBe('production');
    await platform.db.query('UPDATE projects SET production_domains = $2 WHERE id = $1', [p.projectId, ['new.example.com']]);
    expect(await envOf('new.example.com')).toBe('unknown'); // still the cached domains
    clock.advance(DOMAINS_TTL_MS);
    expect(await envOf('new.example.com')).toBe('production');
    expect(await envOf('old.example.com')).toBe('unknown');
  });

  it('reads deploys fresh: an event naming a deploy created a moment ago finds it', async () => {
    const step = createEnvironmentStep({ db: platform.db, clock: new ManualClock() });
    const p = await createIngestProject(platform);
    const deployId = newId('dep_');
    const first = await step([event(p.projectId, null, { deployId })]);
    expect(first[0].kind === 'ok' && first[0].value.environment).toBe('unknown');
    await platform.db.query(`INSERT INTO deploys (id, project_id, branch, environment) VALUES ($1, $2, 'main', 'production')`, [deployId, p.projectId]);
    const second = await step([event(p.projectId, null, { deployId })]);
    expect(second[0].kind === 'ok' && second[0].value.environment).toBe('production');
  });

  it('drops events of a project that does not exist', async () => {
    const step = createEnvironmentStep({ db: platform.db });
    const [o] = await step([event('prj_missing', null)]);
    expect(o).toMatchObject({ kind: 'drop', reason: 'unknown_project' });
  });
});
