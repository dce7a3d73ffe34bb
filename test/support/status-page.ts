import type { FastifyInstance } from 'fastify';
import { createProject, sessionHeaders } from './accounts.ts';
import { steerableGuard, type SteerableGuard } from './outbound-guard.ts';

/** The name the status page tests' monitors check: resolved to a public address, never dialled (the monitors are paused). */
export const STATUS_TARGET = 'https://status-target.example/';

/** An outbound guard that takes STATUS_TARGET (and `more` names) and fails every other unknown name. */
export function statusTestGuard(opts: { ca?: string; more?: Record<string, string[]> } = {}): SteerableGuard {
  const outbound = steerableGuard({ ca: opts.ca, unknownNames: 'fail' });
  outbound.table['status-target.example'] = ['93.184.215.14'];
  Object.assign(outbound.table, opts.more);
  return outbound;
}

/** A new project with one public, paused monitor (named `name`): it has a status page. */
export async function publicStatusPage(app: FastifyInstance, cookie: string, name = 'API'): Promise<{ slug: string; id: string; monitorId: string }> {
  const project = await createProject(app, cookie);
  const res = await app.inject({
    method: 'POST',
    url: `/v1/projects/${project.slug}/uptime`,
    headers: sessionHeaders(cookie),
    payload: { name, url: STATUS_TARGET, public: true, paused: true },
  });
  if (res.statusCode !== 201) throw new Error(`create monitor: ${res.statusCode} ${res.body}`);
  return { slug: project.slug, id: project.id, monitorId: res.json().monitor.id };
}
