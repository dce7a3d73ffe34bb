import { publicBaseUrl } from '../platform/config.ts';
import { randomBytes } from 'node:crypto';
import type { Platform } from '../platform/platform.ts';
import { ALL_SCOPES } from '../schemas/scopes.ts';
import { usersRepository } from '../api/accounts/users-repository.ts';
import { projectsRepository } from '../api/projects/projects-repository.ts';
import { keysRepository } from '../api/keys/keys-repository.ts';
import { ingestDsn } from '../platform/sentry-dsn.ts';
import { bootstrapRepository } from './bootstrap-repository.ts';

/**
 * First start: with an empty instance, create the owner account, a demo project with domains,
 * an ingest key and a project API key with every scope, and hand the secrets back to be printed
 * once. The marker row is inserted in the same transaction as everything else, so two processes
 * starting together create one owner, and a failed start leaves nothing half-made.
 * Returns null on every later start.
 */
export interface FirstStart {
  email: string;
  password: string;
  projectSlug: string;
  ingestKey: string;
  /** The ingest key's Sentry DSN (platform/sentry-dsn.ts). */
  dsn: string;
  apiKey: string;
}

export async function bootstrapInstance(platform: Platform): Promise<FirstStart | null> {
  const { db, config, clock, logger } = platform;
  const result = await db.transaction(async (tx) => {
    if (!(await bootstrapRepository.claimFirstStart(tx, clock.now()))) return null;
    const password = config.OWNER_PASSWORD ?? randomBytes(18).toString('base64url');
    const owner = await usersRepository.createUser(tx, { email: config.OWNER_EMAIL, password, name: 'Owner' });
    // The demo's production host is the one npm start serves its site on (<slug>.<SITES_DOMAIN>, any port).
    // Deploy hosts need no pattern: the platform stamps its own hosts (platform/sites/platform-hosts.ts).
    const input = (slug: string) => ({
      ownerId: owner.id,
      name: 'Demo',
      defaultBranch: 'main',
      environmentHosts: { production: [`${slug}.${config.SITES_DOMAIN.toLowerCase()}`], preview: [] },
    });
    const fallback = `demo-${randomBytes(3).toString('hex')}`;
    let project = await projectsRepository.insertProject(tx, input('demo'), 'demo');
    if (!project) project = await projectsRepository.insertProject(tx, input(fallback), fallback);
    if (!project) throw new Error('could not create the demo project');
    const ingest = await keysRepository.createKey(tx, {
      projectId: project.id,
      kind: 'ingest',
      name: 'demo ingest key',
      createdBy: owner.id,
      now: clock.now(),
    });
    const api = await keysRepository.createKey(tx, {
      projectId: project.id,
      kind: 'live',
      name: 'demo API key (every scope)',
      scopes: [...ALL_SCOPES],
      createdBy: owner.id,
      now: clock.now(),
    });
    const dsn = ingestDsn(ingest.token, await keysRepository.projectNumber(tx, project.id), publicBaseUrl(config));
    return { email: owner.email, password, projectSlug: project.slug, ingestKey: ingest.token, dsn, apiKey: api.token };
  });
  if (result) logger.info({ owner: result.email, project: result.projectSlug }, 'first start: owner account and demo project created');
  return result;
}
