import { alertRecipients } from '../../domain/alert-recipients.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import { monitorsRepository, type Transition } from './repositories/monitors-repository.ts';

/**
 * One alert of a monitor's change, URL monitor or heartbeat alike: the `uptime.down` / `uptime.up` project event (its
 * id derived from the incident, so a retried publish sends nothing twice), then one mail per change to the project's
 * alert recipients (the error alerts' list, without suppressed addresses), claimed on the incident so only one process
 * sends it. Throws when the event cannot be published (the caller retries or logs).
 */
export async function sendUptimeAlert(platform: Pick<Platform, 'db' | 'bus' | 'clock' | 'mailer' | 'config'>, t: Transition): Promise<void> {
  const { db, clock } = platform;
  await publishProjectEvent(platform, { id: `uptime.${t.kind}:${t.incidentId}`, projectId: t.projectId, event: `uptime.${t.kind}`, data: eventData(t) });
  if (!(await monitorsRepository.claimMail(db, t.incidentId, t.kind, clock.now()))) return;
  const to = await alertRecipients(db, t.projectId);
  if (!to.length) return;
  await platform.mailer.send(alertMail(t, to, publicBaseUrl(platform.config)));
}

/** `data` of uptime.down and uptime.up (a heartbeat's monitor names its kind and slug, and has no URL). */
function eventData(t: Transition): Record<string, unknown> {
  const monitor = t.slug === undefined ? { id: t.monitorId, name: t.name, url: t.url } : { id: t.monitorId, name: t.name, kind: 'heartbeat', slug: t.slug };
  return {
    monitor,
    incident: {
      id: t.incidentId,
      startedAt: new Date(t.startedAt).toISOString(),
      endedAt: t.endedAt === null ? null : new Date(t.endedAt).toISOString(),
      durationSec: t.endedAt === null ? null : Math.round((t.endedAt - t.startedAt) / 1000),
      cause: t.cause,
    },
  };
}

const HEARTBEAT_DOWN: Record<string, string> = { missed: 'missed its check-in', timeout: 'ran past its maximum runtime', failed: 'reported an error' };

function alertMail(t: Transition, to: string[], base: string) {
  const link = `${base}/projects`;
  const cause = `${t.cause.error}${t.cause.status ? ` (HTTP ${t.cause.status})` : ''}${t.cause.detail ? `: ${t.cause.detail}` : ''}`;
  const what = t.slug === undefined ? `${t.name} (${t.url})` : `The job ${t.name} (heartbeat ${t.slug})`;
  if (t.kind === 'down')
    return {
      to,
      subject: t.slug === undefined ? `[down] ${t.name} is not answering` : `[down] ${t.name} ${HEARTBEAT_DOWN[t.cause.error] ?? 'failed'}`,
      text: [`${what} is down since ${new Date(t.startedAt).toISOString()}.`, '', `Cause: ${cause}`, '', `Monitors: ${link}`].join('\n'),
    };
  const minutes = Math.max(1, Math.round(((t.endedAt ?? t.startedAt) - t.startedAt) / 60_000));
  return {
    to,
    subject: `[up] ${t.name} is back after ${minutes} min`,
    text: [
      t.slug === undefined ? `${what} answers again, after ${minutes} min down.` : `${what} checks in fine again, after ${minutes} min down.`,
      '',
      `It went down with: ${cause}`,
      '',
      `Monitors: ${link}`,
    ].join('\n'),
  };
}
