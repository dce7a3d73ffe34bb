import { publishProjectEvent } from '../project-event-publisher.ts';
import type { Platform } from '../../platform/platform.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { Maintenance, StatusIncident } from '../../schemas/api/status-incidents.ts';
import type { StatusPage } from '../../schemas/api/uptime.ts';
import type { ProjectEventName } from '../../schemas/project-event-names.ts';
import { writtenStatusRepository } from './written-status-repository.ts';

/**
 * Incidents and maintenance people write (issue 43) as the public status JSON shows them, shared by the API (the
 * status JSON, the routes that write them) and the uptime monitor (the maintenance sweep): the JSON items, and the
 * `uptime.incident.*` / `uptime.maintenance.*` project events that carry the same items. An item names only public
 * monitors: the page's webhook and mail subscribers receive these events too.
 */
export type StatusIncidentItem = StatusPage['incidents'][number];
export type MaintenanceItem = NonNullable<StatusPage['maintenance']>[number];
/** A project's public monitors: id → name. */
export type PublicNames = Map<string, string>;
export const publicMonitorNames = (db: Queryable, projectId: string): Promise<PublicNames> => writtenStatusRepository.publicMonitorNames(db, projectId);

/** An automatic incident the status JSON lists already, as it shows (monitorId, monitor, times, cause). */
export type AutomaticItem = Pick<StatusIncidentItem, 'monitorId' | 'monitor' | 'startedAt' | 'endedAt' | 'cause'>;

/**
 * A written incident as the status JSON shows it. An annotation keeps its automatic incident's monitor, times and
 * cause; a manual one is named after its affected public monitors and runs from its creation to its resolution.
 */
export function incidentItem(i: StatusIncident, names: PublicNames, automatic?: AutomaticItem): StatusIncidentItem {
  const monitorIds = i.monitorIds.filter((id) => names.has(id));
  const base: AutomaticItem = automatic ?? {
    monitorId: monitorIds[0] ?? '',
    monitor: monitorIds.map((id) => names.get(id)).join(', '),
    startedAt: i.createdAt,
    endedAt: i.resolvedAt,
  };
  return {
    ...base,
    id: i.id,
    kind: i.kind,
    title: i.title,
    impact: i.impact,
    status: i.status,
    monitorIds,
    updates: i.updates.map((u) => ({ status: u.status, message: u.message, at: u.at })),
  };
}

export interface MaintenanceRow {
  id: string;
  project_id: string;
  title: string;
  message: string;
  monitor_ids: string[];
  starts_at: Date | string;
  ends_at: Date | string;
  created_at: Date | string;
  cancelled_at: Date | string | null;
}

const iso = (d: Date | string) => new Date(d).toISOString();
const ms = (d: Date | string) => new Date(d).getTime();

export const maintenanceState = (r: MaintenanceRow, now: number): Maintenance['state'] =>
  r.cancelled_at !== null ? 'cancelled' : now < ms(r.starts_at) ? 'scheduled' : now < ms(r.ends_at) ? 'in_progress' : 'completed';

export const toMaintenance = (r: MaintenanceRow, now: number): Maintenance => ({
  id: r.id,
  title: r.title,
  message: r.message,
  monitorIds: r.monitor_ids,
  startsAt: iso(r.starts_at),
  endsAt: iso(r.ends_at),
  state: maintenanceState(r, now),
  createdAt: iso(r.created_at),
  cancelledAt: r.cancelled_at === null ? null : iso(r.cancelled_at),
});

/** A window as the status JSON shows it (which leaves cancelled ones out; their event says `cancelled`). */
export type MaintenanceEventItem = Omit<MaintenanceItem, 'state'> & { state: Maintenance['state'] };
export function maintenanceItem(m: Maintenance, names: PublicNames): MaintenanceEventItem {
  return {
    id: m.id,
    title: m.title,
    message: m.message,
    monitorIds: m.monitorIds.filter((id) => names.has(id)),
    startsAt: m.startsAt,
    endsAt: m.endsAt,
    state: m.state,
  };
}

/**
 * One `uptime.incident.*` / `uptime.maintenance.*` event through the webhook fan-out: `{ projectSlug, incident |
 * maintenance, update? }`. `key` makes its id (a retried publish sends nothing twice).
 */
export async function publishStatusEvent(
  platform: Pick<Platform, 'bus' | 'clock'>,
  e: {
    projectId: string;
    projectSlug: string;
    event: ProjectEventName;
    key: string;
    data: { incident: StatusIncidentItem; update?: unknown } | { maintenance: MaintenanceEventItem };
  },
): Promise<void> {
  await publishProjectEvent(platform, { id: `${e.event}:${e.key}`, projectId: e.projectId, event: e.event, data: { projectSlug: e.projectSlug, ...e.data } });
}
