import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { newId } from '../../platform/tokens.ts';
import { createIngestProject } from '../../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../../test/support/platform.ts';
import { createEnvironmentResolver } from './environment-resolver.ts';

/**
 * Issue 23: environments are right without configuration. A project with no domains set still gets `production`
 * for its slug host and verified domains and its live deploy's host, and `preview` for its other deploy hosts.
 */
let platform: Platform;
beforeAll(async () => {
  platform = await createTestPlatform({ env: { SITES_DOMAIN: 'sites.test' } });
});
afterAll(async () => platform?.close());

async function readyDeploy(projectId: string, environment: 'production' | 'preview') {
  const id = newId('dep_');
  await platform.db.query(
    `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'main', $3, 'ready', '/tmp/x', now())`,
    [id, projectId, environment],
  );
  return { id, host: `${id.replace(/_/g, '-')}.sites.test` };
}

describe("the platform's own hosts stamp environments", () => {
  it("slug host, verified domain and the live deploy's host: production; other deploy hosts: preview; anything else: unknown", async () => {
    const p = await createIngestProject(platform, { productionDomains: [], previewDomains: [] });
    const live = await readyDeploy(p.projectId, 'production');
    const older = await readyDeploy(p.projectId, 'production');
    const preview = await readyDeploy(p.projectId, 'preview');
    await platform.db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [p.projectId, live.id]);
    await platform.db.query(
      `INSERT INTO project_domains (project_id, domain, token, verified_at) VALUES ($1, 'shop.example.com', 't', now()), ($1, 'pending.example.com', 'u', NULL)`,
      [p.projectId],
    );
    const other = await createIngestProject(platform);
    const resolve = createEnvironmentResolver({ db: platform.db, sitesDomain: 'sites.test' });
    const hosts = [
      `${p.slug}.sites.test:8080`,
      `${p.slug}.sites.test`,
      'shop.example.com',
      live.host,
      older.host,
      `${preview.host}:8080`,
      'pending.example.com',
      `${other.slug}.sites.test`,
      'elsewhere.example.net',
    ];
    const got = await resolve(hosts.map((originHost) => ({ projectId: p.projectId, originHost })));
    expect(Object.fromEntries(hosts.map((h, i) => [h, got[i]]))).toEqual({
      [`${p.slug}.sites.test:8080`]: 'production',
      [`${p.slug}.sites.test`]: 'production',
      'shop.example.com': 'production',
      [live.host]: 'production',
      [older.host]: 'preview',
      [`${preview.host}:8080`]: 'preview',
      'pending.example.com': 'unknown',
      [`${other.slug}.sites.test`]: 'unknown',
      'elsewhere.example.net': 'unknown',
    });
  });
});
