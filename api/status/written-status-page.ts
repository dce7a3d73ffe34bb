import type { Queryable } from '../../platform/ports/relational-store.ts';
import { incidentItem, maintenanceItem, type MaintenanceItem, type StatusIncidentItem, toMaintenance } from '../../domain/uptime/written-status.ts';
import type { StatusPage } from '../../schemas/api/uptime.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { writtenStatusRepository as repo } from './written-status-repository.ts';

/**
 * What people wrote, added to a project's status JSON (issue 43; the JSON itself: api/uptime/status-route.ts), in
 * order:
 *   1. maintenance  windows in progress put their covered monitors (not paused) in state `maintenance`, and the
 *                   overall status is `maintenance` when every monitor not paused is; the others decide it as before.
 *                   `maintenance[]` lists windows upcoming, in progress and ended in the last 14 days that cover a
 *                   public monitor (cancelled ones are left out): in progress, then the soonest, then the latest ended
 *   2. annotations  an automatic incident a person annotated carries its annotation (id, title, impact, status,
 *                   updates); one not annotated is as it was
 *   3. manual       written incidents open or resolved within the 90 days join `incidents[]`, open ones first, then the
 *                   newest, each with its newest 10 updates
 * Only public monitors are named: an affected or covered private monitor is left out of every list.
 */
const DAY_MS = 86_400_000;
const S = LIMITS.statusIncidents;

export async function withWrittenStatus(db: Queryable, projectId: string, page: StatusPage, automaticIds: string[], now: number): Promise<StatusPage> {
  const names = new Map(page.monitors.map((m) => [m.id, m.name]));

  // 1. maintenance
  const inProgress = await repo.inProgress(db, projectId, now);
  const covered = new Set(inProgress.flatMap((w) => w.monitor_ids));
  for (const m of page.monitors) if (covered.has(m.id) && m.state !== 'paused') m.state = 'maintenance';
  const active = page.monitors.filter((m) => m.state !== 'paused');
  if (active.length && active.every((m) => m.state === 'maintenance')) page.status = 'maintenance';
  else if (covered.size) {
    const rest = active.filter((m) => m.state !== 'maintenance');
    const down = rest.filter((m) => m.state === 'down').length;
    page.status = rest.every((m) => m.state === 'pending') ? 'pending' : down === 0 ? 'up' : down === rest.length ? 'down' : 'partial';
  }
  const rank = { in_progress: 0, scheduled: 1, completed: 2, cancelled: 3 } as const;
  const windows = (await repo.maintenance(db, projectId, { endedSince: new Date(now - S.maintenanceShownDays * DAY_MS), withCancelled: false, limit: S.shown }))
    .map((r) => maintenanceItem(toMaintenance(r, now), names))
    .filter((w) => w.monitorIds.length > 0)
    .sort((a, b) => rank[a.state] - rank[b.state] || (a.state === 'scheduled' ? a.startsAt.localeCompare(b.startsAt) : b.endsAt.localeCompare(a.endsAt)));
  page.maintenance = windows as MaintenanceItem[];

  // 2. annotations, 3. manual
  const written = await repo.incidents(db, projectId, {
    resolvedSince: new Date(now - LIMITS.uptime.statusDays * DAY_MS),
    limit: S.shown,
    updates: S.updatesShown,
  });
  const annotations = new Map(written.filter((i) => i.automaticIncidentId !== null).map((i) => [i.automaticIncidentId!, i]));
  const automatic = page.incidents.map((item, k) => {
    const note = annotations.get(automaticIds[k] ?? '');
    return note ? incidentItem(note, names, item) : item;
  });
  const manual = written.filter((i) => i.automaticIncidentId === null).map((i) => incidentItem(i, names));
  const open = (i: StatusIncidentItem) => (i.endedAt === null ? 0 : 1);
  page.incidents = [...automatic, ...manual].sort((a, b) => open(a) - open(b) || b.startedAt.localeCompare(a.startedAt));
  return page;
}
