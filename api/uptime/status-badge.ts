import { esc, overallOf, percent, type StatusView } from './status-view.ts';

/**
 * Badges for READMEs (issue 43 "The page"): `status | All systems operational`, or one monitor's uptime over a
 * window (`uptime 7d | 99.95 %`), as a small flat SVG with its text in <title> and aria-label.
 */
export const BADGE_WINDOWS = ['24h', '7d', '90d'] as const;
export type BadgeWindow = (typeof BADGE_WINDOWS)[number];

/** Accessible on white text: GitHub's Primer colours. */
const FILL: Record<string, string> = { ok: '#1a7f37', warn: '#9a6700', bad: '#cf222e', info: '#0969da', none: '#59636e' };
const SHORT: Record<string, string> = {
  up: 'operational',
  partial: 'partial outage',
  down: 'major outage',
  maintenance: 'maintenance',
  pending: 'no checks yet',
};

/** About how wide Verdana 11px sets a text (shields.io's badges use the same font). */
const textWidth = (s: string) =>
  Math.ceil([...s].reduce((w, c) => w + (/[iljt.,:;|!' ]/.test(c) ? 3.6 : /[mwMW%@]/.test(c) ? 10 : /[A-Z0-9]/.test(c) ? 7.6 : 6.6), 0));

function badge(label: string, value: string, tone: string): string {
  const lw = textWidth(label) + 12;
  const vw = textWidth(value) + 12;
  const w = lw + vw;
  const title = `${label}: ${value}`;
  return (
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="20" role="img" aria-label="${esc(title)}"><title>${esc(title)}</title>` +
    `<clipPath id="r"><rect width="${w}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)">` +
    `<rect width="${lw}" height="20" fill="#555"/><rect x="${lw}" width="${vw}" height="20" fill="${FILL[tone] ?? FILL.none}"/></g>` +
    `<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">` +
    `<text x="${lw / 2}" y="14">${esc(label)}</text><text x="${lw + vw / 2}" y="14">${esc(value)}</text></g></svg>`
  );
}

/** The overall state's badge. */
export function overallBadge(status: StatusView): string {
  return badge('status', SHORT[status.status] ?? status.status, overallOf(status.status).tone);
}

/** One monitor's uptime over a window, or undefined when the page has no such monitor. */
export function monitorBadge(status: StatusView, monitorId: string, window: BadgeWindow): string | undefined {
  const m = status.monitors.find((x) => x.id === monitorId);
  if (!m) return undefined;
  const u = m.uptime[window];
  const tone = u === null ? 'none' : u >= 99.9 ? 'ok' : u >= 99 ? 'warn' : 'bad';
  return badge(`uptime ${window}`, percent(u), tone);
}
