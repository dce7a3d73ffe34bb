import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildsRepository } from '../../builder/builds-repository.ts';
import type { Bus } from '../../platform/ports/bus.ts';
import { buildTestApi, createProject, signUpAndSignIn } from '../../test/support/accounts.ts';
import { queueDeploy } from './queue-deploy.ts';

/**
 * Queueing a deploy when the bus cannot take its wake-up (spec §3.3): the deploy is removed again and the caller gets
 * the error, so it holds no production slot; unless a builder claimed it meanwhile (a builder that finished a build
 * takes any queued deploy), when it is underway and the caller is told it is queued, as it is.
 */
describe('queueDeploy when the bus fails', () => {
  let t: Awaited<ReturnType<typeof buildTestApi>>;
  let cookie: string;
  beforeAll(async () => {
    t = await buildTestApi();
    cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  });
  afterAll(async () => {
    await t?.close();
  });

  /** A bus whose publish fails, after `meanwhile` ran with the deploy's id. */
  const failingBus = (meanwhile: (deployId: string) => Promise<void> = async () => undefined) =>
    ({
      ...t.platform.bus,
      publish: async (_topic: string, ms: Array<{ key: string }>) => {
        await meanwhile(ms[0]!.key);
        throw new Error('bus unavailable');
      },
    }) as Bus;
  const statusOf = async (id: string) => (await t.platform.db.query<{ status: string }>('SELECT status FROM deploys WHERE id = $1', [id])).rows[0]?.status;

  it('removes the deploy and undoes its preparation: the production slot is free again', async () => {
    const p = await createProject(t.app, cookie);
    const undone: string[] = [];
    const prepare = { before: async () => undefined, undo: async (id: string) => void undone.push(id) };
    let tried = '';
    const req = { projectId: p.id, branch: 'main', trigger: 'api' as const, triggerId: null, now: Date.now(), prepare };
    const bus = failingBus(async (id) => void (tried = id));
    await expect(queueDeploy(t.platform.db, bus, req)).rejects.toThrow(/bus unavailable/);
    expect(await statusOf(tried)).toBeUndefined();
    expect(undone).toEqual([tried]);
    const next = await queueDeploy(t.platform.db, t.platform.bus, req);
    expect(next.deploy.status).toBe('queued');
  });

  it('a deploy a builder claimed before the publish failed is answered as queued, and stays with its builder', async () => {
    const p = await createProject(t.app, cookie);
    const undone: string[] = [];
    const prepare = { before: async () => undefined, undo: async (id: string) => void undone.push(id) };
    const now = Date.now();
    const claimed = failingBus(async (id) => {
      expect(await buildsRepository.claim(t.platform.db, 'builder-x', now, now + 60_000, { deployId: id })).toBeDefined();
    });
    const queued = await queueDeploy(t.platform.db, claimed, { projectId: p.id, branch: 'main', trigger: 'api', triggerId: null, now, prepare });
    expect(queued).toMatchObject({ deduplicated: false, deploy: { status: 'queued' } });
    expect(await statusOf(queued.deploy.id)).toBe('building');
    expect(undone).toEqual([]);
  });
});
