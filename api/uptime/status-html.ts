import { createHash } from 'node:crypto';
import {
  esc,
  type IncidentView,
  incidentKey,
  incidentTitle,
  isOpen,
  type MaintenanceView,
  type MonitorView,
  monitorStateOf,
  overallOf,
  percent,
  type StatusView,
  utc,
  words,
} from './status-view.ts';

/**
 * The status page (issue 43 "The page"), rendered on the server from the status JSON's object: no script, one inline
 * style sheet (allowed by its hash in the Content-Security-Policy), light and dark (prefers-color-scheme), about
 * 10 KB for a few monitors. Top to bottom: the overall state, maintenance under way and planned, current incidents,
 * each public monitor (its state, uptime, a 90-day bar of daily uptime and a 24-hour response-time chart as inline
 * SVG, each with a text alternative), past incidents with their updates, and a subscribe form that posts without
 * script. Everything a tenant wrote (monitor names, incident titles and updates) is escaped text.
 */
export interface PageLinks {
  /** Where the subscribe form posts (application/x-www-form-urlencoded `email`). */
  subscribe: string;
  feed: string;
  json: string;
}

const DAY_W = 5;
const BAR_H = 34;
const CHART_W = 480;
const CHART_H = 80;

export const STATUS_PAGE_CSS = `:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--mu:#59636e;--ln:#d1d9e0;--card:#f6f8fa;--ok:#1a7f37;--warn:#9a6700;--bad:#cf222e;--info:#0969da;--none:#818b98}
@media (prefers-color-scheme:dark){:root{--bg:#0d1117;--fg:#e6edf3;--mu:#9198a1;--ln:#3d444d;--card:#151b23;--ok:#3fb950;--warn:#d29922;--bad:#f85149;--info:#4493f8;--none:#656c76}}
*{box-sizing:border-box}body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
header,main,footer{max-width:52rem;margin:0 auto;padding:1rem}h1{font-size:1.6rem;margin:.5rem 0}h2{font-size:1.25rem;margin:2rem 0 .75rem}h3{font-size:1.05rem;margin:0}
a{color:var(--info)}.mu{color:var(--mu);font-size:.9rem}.banner{padding:1rem;border-radius:.5rem;color:#fff;font-weight:600;font-size:1.15rem;margin:0}
.b-ok{background:var(--ok)}.b-warn{background:var(--warn)}.b-bad{background:var(--bad)}.b-info{background:var(--info)}.b-none{background:var(--none)}
@media (prefers-color-scheme:dark){.banner{color:#0d1117}}
ul.l{list-style:none;padding:0;margin:0}.card{border:1px solid var(--ln);background:var(--card);border-radius:.5rem;padding:1rem;margin:0 0 1rem}
.row{display:flex;justify-content:space-between;gap:1rem;align-items:baseline;flex-wrap:wrap}
.t-ok{color:var(--ok)}.t-warn{color:var(--warn)}.t-bad{color:var(--bad)}.t-info{color:var(--info)}.t-none{color:var(--mu)}.tag{font-weight:600}
svg{display:block;width:100%;height:auto;margin:.5rem 0}.f-ok{fill:var(--ok)}.f-warn{fill:var(--warn)}.f-bad{fill:var(--bad)}.f-none{fill:var(--none)}.s-none{stroke:var(--none)}
.ax{stroke:var(--ln)}.ln{fill:none;stroke:var(--info);stroke-width:2}.lb{fill:var(--mu);font-size:11px}
ol.u{padding-left:1.2rem;margin:.5rem 0 0}ol.u p{margin:.1rem 0 .5rem;white-space:pre-wrap;overflow-wrap:anywhere}
form{display:flex;gap:.5rem;flex-wrap:wrap;align-items:center}input{font:inherit;padding:.4rem .6rem;border:1px solid var(--mu);border-radius:.3rem;background:var(--bg);color:var(--fg);min-width:16rem}
button{font:inherit;padding:.4rem .9rem;border:0;border-radius:.3rem;background:var(--info);color:#fff;font-weight:600}@media (prefers-color-scheme:dark){button{color:#0d1117}}
.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}`;

/** The Content-Security-Policy of the page: its one style sheet by hash, no script at all, forms to its own origin. */
export const STATUS_PAGE_CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STATUS_PAGE_CSS).digest('base64')}'; img-src 'self' data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'`;

/** A day's tone on the bar: all up, a little down, more down, or no checks. */
const dayTone = (u: number | null) => (u === null ? 'none' : u >= 99.9 ? 'ok' : u >= 99 ? 'warn' : 'bad');

/** The 90-day bar: one path per tone (small), and in words what it shows. */
function uptimeBar(m: MonitorView, n: number): string {
  const paths: Record<string, string> = { ok: '', warn: '', bad: '' };
  m.daily.forEach((d, i) => {
    if (d.uptime !== null) paths[dayTone(d.uptime)] += `M${i * DAY_W} 0h${DAY_W - 1}v${BAR_H}h-${DAY_W - 1}z`;
  });
  const checked = m.daily.filter((d) => d.uptime !== null);
  const worst = [...checked]
    .filter((d) => (d.uptime ?? 100) < 100)
    .sort((a, b) => (a.uptime ?? 0) - (b.uptime ?? 0))
    .slice(0, 3);
  const label =
    `Daily uptime over the last ${m.daily.length} days: ${checked.length} days with checks, ` +
    `${checked.filter((d) => d.uptime === 100).length} fully up` +
    (worst.length ? `; lowest ${worst.map((d) => `${percent(d.uptime)} on ${d.date}`).join(', ')}` : '') +
    '.';
  const body = Object.entries(paths)
    .filter(([, d]) => d)
    .map(([tone, d]) => `<path class="f-${tone}" d="${d}"/>`)
    .join('');
  // Every day's slot in grey (one dashed line), the days with checks drawn over it.
  const w = m.daily.length * DAY_W;
  const slots = `<line class="s-none" x1="0" y1="${BAR_H / 2}" x2="${w}" y2="${BAR_H / 2}" stroke-width="${BAR_H}" stroke-dasharray="${DAY_W - 1} 1"/>`;
  return `<svg id="bar-${n}" role="img" aria-label="${esc(label)}" viewBox="0 0 ${w} ${BAR_H}" preserveAspectRatio="none" height="${BAR_H}">${slots}${body}</svg>`;
}

/** The 24-hour response-time chart: hourly averages as a line, its range in words. */
function responseChart(m: MonitorView, n: number, now: number): string {
  const points = m.responseTimes24h ?? [];
  if (!points.length) return '<p class="mu">No response times in the last 24 hours.</p>';
  const max = Math.max(...points.map((p) => p.ms), 1);
  const first = Math.floor(now / 3_600_000) * 3_600_000 - 23 * 3_600_000;
  const xy = points.map((p) => {
    const x = Math.max(0, Math.min(23, Math.round((Date.parse(p.at) - first) / 3_600_000))) * (CHART_W / 23);
    const y = CHART_H - 14 - (p.ms / max) * (CHART_H - 24);
    return `${Math.round(x)},${Math.round(y)}`;
  });
  const avg = Math.round(points.reduce((a, p) => a + p.ms, 0) / points.length);
  const min = Math.min(...points.map((p) => p.ms));
  const label = `Response time over the last 24 hours (hourly averages): average ${avg} ms, fastest hour ${min} ms, slowest hour ${max} ms.`;
  const line =
    xy.length === 1
      ? `<circle class="f-ok" cx="${xy[0]!.split(',')[0]}" cy="${xy[0]!.split(',')[1]}" r="3"/>`
      : `<polyline class="ln" points="${xy.join(' ')}"/>`;
  return (
    `<svg id="rt-${n}" role="img" aria-label="${esc(label)}" viewBox="0 0 ${CHART_W} ${CHART_H}">` +
    `<line class="ax" x1="0" y1="${CHART_H - 13}" x2="${CHART_W}" y2="${CHART_H - 13}"/>${line}` +
    `<text class="lb" x="0" y="${CHART_H - 1}">24 h ago</text><text class="lb" x="${CHART_W}" y="${CHART_H - 1}" text-anchor="end">now</text>` +
    `<text class="lb" x="${CHART_W}" y="9" text-anchor="end">${max} ms</text></svg>`
  );
}

function monitorItem(m: MonitorView, n: number, now: number): string {
  const state = monitorStateOf(m.state);
  const url = m.url && /^https?:\/\//i.test(m.url) ? `<p class="mu"><a href="${esc(m.url)}" rel="nofollow noopener noreferrer">${esc(m.url)}</a></p>` : '';
  return (
    `<li class="card"><div class="row"><h3>${esc(m.name)}</h3><span class="tag t-${state.tone}">${esc(state.text)}</span></div>${url}` +
    `<p class="mu">Uptime: 24 hours ${percent(m.uptime['24h'])} · 7 days ${percent(m.uptime['7d'])} · ${m.daily.length} days ${percent(m.uptime['90d'])}</p>` +
    `${uptimeBar(m, n)}<p class="mu row"><span>${m.daily.length} days ago</span><span>today</span></p>${responseChart(m, n, now)}</li>`
  );
}

/** The names of the public monitors among `ids` (an id of a monitor that is not public shows nothing). */
function affected(ids: string[] | undefined, names: Map<string, string>): string {
  const shown = (ids ?? []).map((id) => names.get(id)).filter((x): x is string => x !== undefined);
  return shown.length ? `<p class="mu">Affects: ${shown.map(esc).join(', ')}</p>` : '';
}

function incidentItem(i: IncidentView, names: Map<string, string>): string {
  const open = isOpen(i);
  const tone = open ? (i.impact === 'none' || i.impact === 'minor' ? 'warn' : 'bad') : 'ok';
  const status = i.status ? words(i.status) : open ? 'Ongoing' : 'Resolved';
  const meta = [i.impact ? `Impact: ${esc(words(i.impact))}` : '', `Started ${esc(utc(i.startedAt))}`, i.endedAt ? `ended ${esc(utc(i.endedAt))}` : ''].filter(
    Boolean,
  );
  // Newest first: the JSON lists them oldest first, so updates of the same instant are reversed too.
  const updates = [...(i.updates ?? [])].reverse().sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
  const list = updates.length
    ? `<ol class="u" aria-label="Updates, newest first">${updates
        .map(
          (u) => `<li><strong>${esc(words(u.status))}</strong> <time class="mu" datetime="${esc(u.at)}">${esc(utc(u.at))}</time><p>${esc(u.message)}</p></li>`,
        )
        .join('')}</ol>`
    : '';
  return (
    `<li class="card" id="incident-${esc(incidentKey(i))}"><article><div class="row"><h3>${esc(incidentTitle(i))}</h3><span class="tag t-${tone}">${esc(status)}</span></div>` +
    `<p class="mu">${meta.join(' · ')}</p>${affected(i.monitorIds ?? [i.monitorId], names)}${list}</article></li>`
  );
}

function maintenanceItem(w: MaintenanceView, names: Map<string, string>): string {
  const state =
    w.state === 'in_progress'
      ? { text: 'In progress', tone: 'info' }
      : w.state === 'scheduled'
        ? { text: 'Scheduled', tone: 'none' }
        : { text: words(w.state), tone: 'ok' };
  return (
    `<li class="card" id="maintenance-${esc(w.id)}"><article><div class="row"><h3>${esc(w.title)}</h3><span class="tag t-${state.tone}">${esc(state.text)}</span></div>` +
    `<p class="mu">From <time datetime="${esc(w.startsAt)}">${esc(utc(w.startsAt))}</time> to <time datetime="${esc(w.endsAt)}">${esc(utc(w.endsAt))}</time></p>` +
    `${affected(w.monitorIds, names)}${w.message ? `<ol class="u" aria-label="Message"><li><p>${esc(w.message)}</p></li></ol>` : ''}</article></li>`
  );
}

const section = (id: string, title: string, body: string) => `<section aria-labelledby="${id}"><h2 id="${id}">${title}</h2>${body}</section>`;
const list = (items: string[]) => `<ul class="l">${items.join('')}</ul>`;

/**
 * What a browser gets for a status page that does not exist (with the 404; every other client gets the JSON error):
 * a page in the status page's own style saying so, the name as the visitor typed it escaped and cut to 100 characters.
 */
export function renderStatusNotFoundHtml(slug: string): string {
  const name = esc(slug.slice(0, 100));
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>No status page</title><meta name="color-scheme" content="light dark"><meta name="robots" content="noindex">` +
    `<style>${STATUS_PAGE_CSS}</style></head><body><header><h1>No status page here</h1></header><main>` +
    `<p>There is no status page named <code>${name}</code>. Check the address, or ask the site's owner for the link to theirs.</p>` +
    `</main></body></html>`
  );
}

/** The page of a project's status (`slug` as the visitor named it: it is the page's only name of the project). */
export function renderStatusHtml(status: StatusView, slug: string, links: PageLinks): string {
  const now = Date.parse(status.updatedAt) || 0;
  const overall = overallOf(status.status);
  const names = new Map(status.monitors.map((m) => [m.id, m.name]));
  const maintenance = status.maintenance ?? [];
  const planned = maintenance
    .filter((w) => w.state === 'in_progress' || w.state === 'scheduled')
    .sort((a, b) => Date.parse(a.startsAt) - Date.parse(b.startsAt));
  const pastMaintenance = maintenance.filter((w) => w.state !== 'in_progress' && w.state !== 'scheduled');
  const current = status.incidents.filter(isOpen);
  const past = status.incidents.filter((i) => !isOpen(i));
  const name = esc(slug);
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>${name} status</title><meta name="color-scheme" content="light dark"><meta name="robots" content="noarchive">` +
    `<link rel="alternate" type="application/atom+xml" title="${name} status: incidents and maintenance" href="${esc(links.feed)}">` +
    `<style>${STATUS_PAGE_CSS}</style></head><body>` +
    `<header><h1>${name} status</h1></header><main>` +
    `<section aria-labelledby="overall"><h2 class="sr" id="overall">Overall state</h2><p class="banner b-${overall.tone}">${esc(overall.text)}</p>` +
    `<p class="mu">Updated <time datetime="${esc(status.updatedAt)}">${esc(utc(status.updatedAt))}</time></p></section>` +
    (planned.length ? section('maintenance', 'Maintenance', list(planned.map((w) => maintenanceItem(w, names)))) : '') +
    (current.length ? section('current', 'Current incidents', list(current.map((i) => incidentItem(i, names)))) : '') +
    section(
      'monitors',
      'Monitors',
      status.monitors.length
        ? `<p class="mu">Bars: one a day, <span class="t-ok">green</span> 99.9 % up or more, <span class="t-warn">amber</span> 99 % or more, <span class="t-bad">red</span> less, grey without checks.</p>${list(status.monitors.map((m, n) => monitorItem(m, n, now)))}`
        : '<p>No public monitors.</p>',
    ) +
    section(
      'past',
      'Past incidents',
      past.length || pastMaintenance.length
        ? list([...past.map((i) => incidentItem(i, names)), ...pastMaintenance.map((w) => maintenanceItem(w, names))])
        : '<p class="mu">No incidents in the last 90 days.</p>',
    ) +
    section(
      'subscribe',
      'Get updates',
      `<form method="post" action="${esc(links.subscribe)}"><label for="email">Email address</label>` +
        `<input id="email" name="email" type="email" required maxlength="254" autocomplete="email"><button type="submit">Subscribe</button></form>` +
        `<p class="mu">Or follow the <a href="${esc(links.feed)}">Atom feed</a>, or read the <a href="${esc(links.json)}">status JSON</a>.</p>`,
    ) +
    `</main><footer class="mu">Times are UTC.</footer></body></html>`
  );
}
