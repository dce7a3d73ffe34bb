import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usageMonth } from '../domain/usage-month.ts';
import { ManualClock } from '../platform/clock.ts';
import type { Platform } from '../platform/platform.ts';
import type { RelationalStore } from '../platform/ports/relational-store.ts';
import { newId } from '../platform/tokens.ts';
import { LIMITS } from '../schemas/limits.ts';
import { addIngestKey, createIngestProject, revokeKey, setPaused, setUsage, type IngestProject } from '../test/support/ingest-fixtures.ts';
import { edgeRepository } from './edge-repository.ts';
import { startFlagCache, type FlagCache } from './flag-cache.ts';
import { startProjectCache, type ProjectCache } from './project-cache.ts';

/**
 * The edge's caches at rest (issue 44 "light at rest"): each refresh of the project cache reads the `edge` change stamp
 * (migration 0048) with the month's usage in one statement, the flag cache follows that stamp, and they reload keys,
 * hosts and flags only when the stamp moved, when the last full load is
 * LIMITS.edgeFullReloadMs old, or by hand. Every input of the gated reads moves the stamp; the columns written while
 * keys are used or deploys build, and the usage tables, do not. `open` gives a platform of the test's own (nothing
 * else writes to it) on the given clock, with SETTINGS_REFRESH_MS 100.
 */
export function defineEdgeChangeStampScenarios(name: string, open: (clock: ManualClock) => Promise<Platform>) {
  describe(name, () => {
    const clock = new ManualClock();
    let platform: Platform;
    let cache: ProjectCache;
    let flags: FlagCache;
    let project: IngestProject;
    /** What the caches asked, in order; `failing` makes the keys' read fail. */
    const asked: string[] = [];
    let failing = false;

    const stamp = () => edgeRepository.changeStamp(platform.db);
    const edgeProject = () => cache.byToken(project.ingestKey)?.project;
    /** Resolves once the project cache has refreshed twice since the call: the second started after it. */
    const twoTicks = async () => {
      const start = cache.loads;
      await expect.poll(() => cache.loads).toBeGreaterThanOrEqual(start + 2);
    };
    const readsOf = (table: string, since: number) => asked.slice(since).filter((sql) => sql.includes(table)).length;

    beforeAll(async () => {
      platform = await open(clock);
      const db: RelationalStore = {
        adapter: platform.db.adapter,
        async query(sql, params) {
          asked.push(sql);
          if (failing && sql.includes('FROM api_keys')) throw new Error('the keys read failed (test)');
          return platform.db.query(sql, params);
        },
        transaction: (fn) => platform.db.transaction(fn),
        close: async () => undefined,
      };
      project = await createIngestProject(platform);
      cache = await startProjectCache({ ...platform, db });
      // As the edge starts them (ingest-server.ts): the flag cache follows the project cache's stamp.
      flags = await startFlagCache({ ...platform, db }, { stamp: () => cache.stamp });
    });

    afterAll(async () => {
      cache?.stop();
      flags?.stop();
      await platform?.close();
    });

    it('at rest a refresh is one statement, the stamp with the usage: no keys, hosts or flags, and a cap still reaches the edge', async () => {
      const [projectLoads, flagLoads, since] = [cache.fullLoads, flags.fullLoads, asked.length];
      const start = cache.loads;
      await expect.poll(() => cache.loads).toBeGreaterThanOrEqual(start + 5);
      // One statement a refresh, the stamp with the month's usage (the project cache); the flag cache follows that
      // stamp and asks nothing. (A refresh under way has asked but not counted yet: one more.)
      const [statements, refreshes] = [asked.slice(since), cache.loads - start];
      expect(statements.filter((sql) => !/change_stamps[\s\S]*error_monthly_usage[\s\S]*analytics_monthly_usage/.test(sql))).toEqual([]);
      expect(statements.length).toBeGreaterThanOrEqual(5);
      expect(statements.length).toBeLessThanOrEqual(refreshes + 1);

      // The processor's usage moves no stamp, and is read every refresh all the same.
      const before = await stamp();
      expect(edgeProject()?.capped.production).toBe(false);
      await setUsage(platform, project.projectId, usageMonth(clock.now()), 'production', LIMITS.errorCaps.productionPerMonth);
      await platform.db.query('INSERT INTO analytics_monthly_usage (project_id, month, accepted) VALUES ($1, $2, $3)', [
        project.projectId,
        usageMonth(clock.now()),
        LIMITS.analyticsMonthlyQuota,
      ]);
      expect(await stamp()).toBe(before);
      await twoTicks();
      expect(edgeProject()).toMatchObject({ capped: { production: true, preview: false }, analyticsQuotaReached: true });
      expect([cache.fullLoads, flags.fullLoads]).toEqual([projectLoads, flagLoads]);
    });

    /** `change` moves the stamp; the project cache loads again within two refreshes, the flag cache soon after. */
    const reloadsAfter = async (change: () => Promise<unknown>) => {
      const [before, projectLoads, flagLoads] = [await stamp(), cache.fullLoads, flags.fullLoads];
      await change();
      expect(await stamp()).not.toBe(before);
      await twoTicks();
      expect(cache.fullLoads).toBeGreaterThan(projectLoads);
      await expect.poll(() => flags.fullLoads).toBeGreaterThan(flagLoads);
    };

    it('a key made and revoked, a domain verified, a project paused, a flag changed and a deploy ready each move the stamp and reach the edge with the next refresh', async () => {
      let key = { ingestKey: '', keyId: '' };
      await reloadsAfter(async () => (key = await addIngestKey(platform, project.projectId)));
      expect(cache.byToken(key.ingestKey)?.keyId).toBe(key.keyId);
      // Revoked: it stops resolving with the refresh after the commit, also through byToken's memo.
      await reloadsAfter(() => revokeKey(platform, key.keyId));
      expect(cache.byToken(key.ingestKey)).toBeUndefined();

      const domain = `shop-${newId('').toLowerCase()}.example.org`;
      await reloadsAfter(() => platform.db.query(`INSERT INTO project_domains (project_id, domain, token) VALUES ($1, $2, 't')`, [project.projectId, domain]));
      expect(edgeProject()?.productionDomains).not.toContain(domain);
      await reloadsAfter(() =>
        platform.db.query('UPDATE project_domains SET verified_at = now() WHERE project_id = $1 AND domain = $2', [project.projectId, domain]),
      );
      expect(edgeProject()?.productionDomains).toContain(domain);

      await reloadsAfter(() => setPaused(platform, project.projectId, true));
      expect(edgeProject()?.paused).toBe(true);
      await reloadsAfter(() => setPaused(platform, project.projectId, false));
      expect(edgeProject()?.paused).toBe(false);

      const flag = { key: 'beta', description: '', enabled: true, rolloutPercentage: 100, variants: [], conditions: [] };
      await reloadsAfter(() =>
        platform.db.query('INSERT INTO feature_flags (id, project_id, key, definition) VALUES ($1, $2, $3, $4::jsonb)', [
          newId('flg_'),
          project.projectId,
          flag.key,
          JSON.stringify(flag),
        ]),
      );
      await expect.poll(() => flags.of(project.projectId)?.flags.get('beta')?.enabled).toBe(true);
      await reloadsAfter(() =>
        platform.db.query('UPDATE feature_flags SET definition = $3::jsonb WHERE project_id = $1 AND key = $2', [
          project.projectId,
          flag.key,
          JSON.stringify({ ...flag, enabled: false }),
        ]),
      );
      await expect.poll(() => flags.of(project.projectId)?.flags.get('beta')?.enabled).toBe(false);

      const deployId = newId('dep_');
      const host = `${deployId.replace(/_/g, '-')}.${platform.config.SITES_DOMAIN}`;
      await reloadsAfter(() =>
        platform.db.query(`INSERT INTO deploys (id, project_id, branch, environment, status) VALUES ($1, $2, 'feature', 'preview', 'building')`, [
          deployId,
          project.projectId,
        ]),
      );
      expect(edgeProject()?.previewDomains).not.toContain(host);
      expect(flags.environmentOfDeploy(project.projectId, deployId)).toBeUndefined();
      await reloadsAfter(() =>
        platform.db.query(`UPDATE deploys SET status = 'ready', artifact_dir = 'artifacts/x', finished_at = now() WHERE id = $1`, [deployId]),
      );
      expect(edgeProject()?.previewDomains).toContain(host);
      await expect.poll(() => flags.environmentOfDeploy(project.projectId, deployId)).toBe('preview');
    });

    it('leaves the stamp where it was for what the edge does not read: keys used, a build under way, a claim of nothing, a setting saved unchanged, a rollback', async () => {
      const { keyId } = await addIngestKey(platform, project.projectId);
      const deployId = newId('dep_');
      await platform.db.query(`INSERT INTO deploys (id, project_id, branch, environment, status) VALUES ($1, $2, 'main', 'production', 'building')`, [
        deployId,
        project.projectId,
      ]);
      const before = await stamp();

      await edgeRepository.markKeysUsed(platform.db, [keyId], clock.now());
      await platform.db.query(
        `UPDATE deploys SET lease_owner = 'bld_x', lease_until = now() + interval '30 seconds', started_at = now(), log_lines = log_lines + 1,
                artifact_bytes = 10, cancel_requested = false WHERE id = $1`,
        [deployId],
      );
      // The builder's claim when nothing is queued: a statement that touches no row.
      await platform.db.query(`UPDATE deploys SET status = 'building', lease_owner = 'bld_x' WHERE project_id = $1 AND status = 'queued'`, [project.projectId]);
      await setPaused(platform, project.projectId, false);
      await platform.db.query('UPDATE projects SET uptime_site_monitor = false, production_domains = production_domains WHERE id = $1', [project.projectId]);
      await expect(
        platform.db.transaction(async (tx) => {
          await tx.query(`UPDATE api_keys SET revoked_at = now() WHERE id = $1`, [keyId]);
          throw new Error('rolled back (test)');
        }),
      ).rejects.toThrow('rolled back');
      expect(await stamp()).toBe(before);

      // Many rows in one transaction move it once.
      await platform.db.transaction(async (tx) => {
        for (let i = 0; i < 3; i++) await addIngestKey({ ...platform, db: tx as RelationalStore }, project.projectId);
      });
      expect(Number(await stamp())).toBe(Number(before) + 1);
    });

    it('reloads whole at the latest every LIMITS.edgeFullReloadMs: a change the triggers missed reaches the edge then', async () => {
      await twoTicks();
      await platform.db.query('ALTER TABLE error_settings DISABLE TRIGGER edge_stamp_update');
      try {
        await setPaused(platform, project.projectId, true);
      } finally {
        await platform.db.query('ALTER TABLE error_settings ENABLE TRIGGER edge_stamp_update');
      }
      const [projectLoads, flagLoads] = [cache.fullLoads, flags.fullLoads];
      await twoTicks();
      expect(edgeProject()?.paused).toBe(false);
      expect(cache.fullLoads).toBe(projectLoads);

      clock.advance(LIMITS.edgeFullReloadMs);
      await twoTicks();
      expect(cache.fullLoads).toBe(projectLoads + 1);
      expect(edgeProject()?.paused).toBe(true);
      await expect.poll(() => flags.fullLoads).toBe(flagLoads + 1);
      await reloadsAfter(() => setPaused(platform, project.projectId, false));
    });

    it('refresh() reloads whole whatever the stamp says', async () => {
      await twoTicks();
      const [projectLoads, flagLoads] = [cache.fullLoads, flags.fullLoads];
      await cache.refresh();
      await flags.refresh();
      expect([cache.fullLoads, flags.fullLoads]).toEqual([projectLoads + 1, flagLoads + 1]);
    });

    it('a failed load keeps the last good snapshot and is made again by the next refresh', async () => {
      await twoTicks();
      const since = asked.length;
      failing = true;
      try {
        await setPaused(platform, project.projectId, true);
        await expect.poll(() => readsOf('FROM api_keys', since)).toBeGreaterThanOrEqual(2);
        expect(edgeProject()?.paused).toBe(false);
        expect(cache.byToken(project.ingestKey)?.keyId).toBe(project.keyId);
      } finally {
        failing = false;
      }
      await twoTicks();
      expect(edgeProject()?.paused).toBe(true);
      await reloadsAfter(() => setPaused(platform, project.projectId, false));
    });
  });
}
