import { esc, incidentKey, incidentTitle, isOpen, type StatusView, utc, words } from './status-view.ts';

/**
 * The Atom feed of a status page (RFC 4287; issue 43 "Subscribing"): one entry per incident (its updates in its
 * content, newest first) and per maintenance window, newest change first. Ids are the page's URL with the item's
 * fragment, so an entry keeps its id as it is updated; `updated` is the item's latest change.
 */
export interface FeedLinks {
  /** The page's absolute URL (the feed's id and alternate link). */
  page: string;
  /** The feed's own absolute URL. */
  self: string;
}

interface Entry {
  id: string;
  title: string;
  published: string;
  updated: string;
  text: string;
}

const iso = (s: string | null | undefined) => {
  const t = Date.parse(s ?? '');
  return Number.isFinite(t) ? new Date(t).toISOString() : new Date(0).toISOString();
};
const latest = (xs: Array<string | null | undefined>) => iso(new Date(Math.max(0, ...xs.map((x) => Date.parse(x ?? '') || 0))).toISOString());

export function renderStatusFeed(status: StatusView, slug: string, links: FeedLinks): string {
  const names = new Map(status.monitors.map((m) => [m.id, m.name]));
  const affected = (ids: string[] | undefined) => (ids ?? []).map((id) => names.get(id)).filter((x): x is string => x !== undefined);
  const entries: Entry[] = [
    ...status.incidents.map((i): Entry => {
      const updates = [...(i.updates ?? [])].reverse().sort((a, b) => Date.parse(b.at) - Date.parse(a.at));
      const state = i.status ? words(i.status) : isOpen(i) ? 'Ongoing' : 'Resolved';
      const on = affected(i.monitorIds ?? [i.monitorId]);
      const lines = [
        `${state}${i.impact ? ` (impact: ${i.impact})` : ''}. Started ${utc(i.startedAt)}${i.endedAt ? `, ended ${utc(i.endedAt)}` : ''}.`,
        ...(on.length ? [`Affects: ${on.join(', ')}.`] : []),
        ...updates.map((u) => `\n${words(u.status)} · ${utc(u.at)}\n${u.message}`),
      ];
      return {
        id: `${links.page}#incident-${incidentKey(i)}`,
        title: `${isOpen(i) ? '' : '[Resolved] '}${incidentTitle(i)}`,
        published: iso(i.startedAt),
        updated: latest([i.startedAt, i.endedAt, ...updates.map((u) => u.at)]),
        text: lines.join('\n'),
      };
    }),
    ...(status.maintenance ?? []).map((w): Entry => {
      const on = affected(w.monitorIds);
      return {
        id: `${links.page}#maintenance-${w.id}`,
        title: `[Maintenance${w.state === 'in_progress' ? ', in progress' : w.state === 'scheduled' ? ', scheduled' : ''}] ${w.title}`,
        published: iso(w.startsAt),
        updated: w.state === 'completed' ? latest([w.endsAt]) : latest([w.startsAt]),
        text: [
          `${words(w.state)}: from ${utc(w.startsAt)} to ${utc(w.endsAt)}.`,
          ...(on.length ? [`Affects: ${on.join(', ')}.`] : []),
          ...(w.message ? ['', w.message] : []),
        ].join('\n'),
      };
    }),
  ].sort((a, b) => Date.parse(b.updated) - Date.parse(a.updated));
  const updated = entries.length ? entries[0]!.updated : iso(status.updatedAt);
  return (
    `<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">` +
    `<id>${esc(links.page)}</id><title>${esc(slug)} status</title><subtitle>Incidents and maintenance</subtitle><updated>${updated}</updated>` +
    `<link rel="self" type="application/atom+xml" href="${esc(links.self)}"/><link rel="alternate" type="text/html" href="${esc(links.page)}"/>` +
    `<author><name>${esc(slug)}</name></author><generator>status page</generator>` +
    entries
      .map(
        (e) =>
          `<entry><id>${esc(e.id)}</id><title type="text">${esc(e.title)}</title><published>${e.published}</published><updated>${e.updated}</updated>` +
          `<link rel="alternate" type="text/html" href="${esc(e.id)}"/><content type="text">${esc(e.text)}</content></entry>`,
      )
      .join('') +
    '</feed>\n'
  );
}
