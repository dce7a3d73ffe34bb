import { maintenanceItem, publicMonitorNames, publishStatusEvent, toMaintenance } from '../../domain/uptime/written-status.ts';
import type { Platform } from '../../platform/platform.ts';
import { maintenanceRepository } from './repositories/maintenance-repository.ts';

/**
 * The start and end of maintenance windows (issue 43), announced by the uptime monitor on its tick (no timer of its
 * own; at most every LIMITS.statusIncidents.maintenanceSweepMs, so at rest it adds one indexed query per 15 s per
 * process), in order:
 *   1. started    windows whose start passed without `uptime.maintenance.started`
 *   2. completed  windows whose end passed without `uptime.maintenance.completed` (only after their start went out)
 * Each event is published before its mark is set, with an id derived from the window and its time, so a second
 * process or a retry after a failed mark sends nothing twice; the mark is set only while the window still has that
 * time, so one moved while its event went out is announced again at its new time. A failed publish is left for the next sweep. Whether a
 * window is in progress never waits for this sweep: the checks and the status JSON read the times themselves.
 */
const BATCH = 50;

export async function sweepMaintenance(
  platform: Pick<Platform, 'db' | 'bus' | 'clock' | 'logger'>,
  now: number,
): Promise<{ started: number; completed: number }> {
  const { db } = platform;
  const counts = { started: 0, completed: 0 };
  for (const edge of ['started', 'ended'] as const) {
    for (const w of await maintenanceRepository.unannounced(db, edge, now, BATCH)) {
      const at = new Date(edge === 'started' ? w.starts_at : w.ends_at).getTime();
      const event = edge === 'started' ? 'uptime.maintenance.started' : 'uptime.maintenance.completed';
      try {
        const item = maintenanceItem(toMaintenance(w, now), await publicMonitorNames(db, w.project_id));
        await publishStatusEvent(platform, { projectId: w.project_id, projectSlug: w.project_slug, event, key: `${w.id}:${at}`, data: { maintenance: item } });
        await maintenanceRepository.announced(db, w.id, edge, at, now);
        counts[edge === 'started' ? 'started' : 'completed']++;
      } catch (err) {
        platform.logger.warn({ err, maintenanceId: w.id }, 'announcing maintenance failed; retried on the next sweep');
        return counts;
      }
    }
  }
  return counts;
}
