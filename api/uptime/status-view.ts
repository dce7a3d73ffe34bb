import type { StatusPage } from '../../schemas/api/uptime.ts';

/**
 * The status JSON as the renderers read it (the page, the badge, the feed): the computed StatusPage object, with the
 * fields the shared contract of issue 43 adds read as optional (manual incidents and their updates, maintenance,
 * `maintenance` states), so the renderers work before those fields exist and show them once they do. Helpers every
 * renderer needs: escaping (everything a tenant wrote is text, never markup), words for states, UTC times.
 */
export interface IncidentUpdateView {
  status: string;
  message: string;
  at: string;
}
export type IncidentView = Omit<StatusPage['incidents'][number], 'cause'> & {
  cause?: string;
  id?: string;
  title?: string;
  impact?: string;
  status?: string;
  updates?: IncidentUpdateView[];
  monitorIds?: string[];
  kind?: string;
};
export interface MaintenanceView {
  id: string;
  title: string;
  message: string;
  monitorIds: string[];
  startsAt: string;
  endsAt: string;
  state: string;
}
export type MonitorView = StatusPage['monitors'][number];
export interface StatusView {
  status: string;
  monitors: MonitorView[];
  incidents: IncidentView[];
  maintenance?: MaintenanceView[];
  updatedAt: string;
}

/** The computed object as a view (the JSON's type is a subtype of the view's). */
export const viewOf = (page: StatusPage): StatusView => page as unknown as StatusView;

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
/** Text for HTML and XML, in content and in quoted attributes; characters XML 1.0 forbids are dropped. */
export function esc(s: unknown): string {
  return String(s ?? '')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\ufffe\uffff]/g, '')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '')
    .replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/** The overall state in words, and the class its colour comes from. */
export const OVERALL: Record<string, { text: string; tone: string }> = {
  up: { text: 'All systems operational', tone: 'ok' },
  partial: { text: 'Partial outage', tone: 'warn' },
  down: { text: 'Major outage', tone: 'bad' },
  maintenance: { text: 'Under maintenance', tone: 'info' },
  pending: { text: 'No checks yet', tone: 'none' },
};
export const overallOf = (status: string) => OVERALL[status] ?? { text: status, tone: 'none' };

export const MONITOR_STATE: Record<string, { text: string; tone: string }> = {
  up: { text: 'Operational', tone: 'ok' },
  down: { text: 'Down', tone: 'bad' },
  maintenance: { text: 'Under maintenance', tone: 'info' },
  paused: { text: 'Paused', tone: 'none' },
  pending: { text: 'No checks yet', tone: 'none' },
};
export const monitorStateOf = (state: string) => MONITOR_STATE[state] ?? { text: state, tone: 'none' };

const CAUSES: Record<string, string> = {
  dns: 'the name did not resolve',
  connect: 'no connection',
  tls: 'a TLS failure',
  timeout: 'no answer in time',
  status: 'an unexpected status',
  body: 'the expected text missing',
  missed: 'a missed check-in',
  failed: 'a failed job',
};

/** An incident's title: a person's, or (automatic) what failed and why. */
export function incidentTitle(i: IncidentView): string {
  if (i.title) return i.title;
  const cause = i.cause ? (CAUSES[i.cause] ?? i.cause) : undefined;
  return `${i.monitor} ${i.endedAt ? 'was' : 'is'} down${cause ? ` (${cause})` : ''}`;
}

/** An incident's id for links and feed entries: its own, or one made of its monitor and start. */
export const incidentKey = (i: IncidentView) => i.id ?? `${i.monitorId}-${Date.parse(i.startedAt) || 0}`;

/** Whether an incident is still open. */
export const isOpen = (i: IncidentView) => (i.status ? i.status !== 'resolved' : i.endedAt === null);

/** `2026-11-27 05:53 UTC` (no script on the page: times are UTC). */
export function utc(iso: string): string {
  const t = Date.parse(iso);
  return Number.isFinite(t) ? `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC` : '';
}

/** An uptime percent as shown: `99.95 %`, or a dash without checks. */
export const percent = (p: number | null | undefined) => (p === null || p === undefined ? '–' : `${Number(p.toFixed(2))} %`);

export const words = (s: string) => s.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
