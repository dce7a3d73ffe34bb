/**
 * Times as text for the stores. The events of one edge batch share a receive time, so each formatter
 * remembers the last instant it formatted: a batch formats each receive time once, not once per event.
 * Callers pass times a Date can hold (schemas/error-event.ts isTime checks them on decode).
 */
let lastIso = { ms: NaN, text: '' };
/** ISO 8601, UTC (Postgres timestamptz input, JSON samples). */
export function isoTime(epochMs: number): string {
  if (epochMs === lastIso.ms) return lastIso.text;
  const text = new Date(epochMs).toISOString();
  lastIso = { ms: epochMs, text };
  return text;
}

let lastCh = { ms: NaN, text: '' };
/** ClickHouse DateTime64(3) text, UTC. */
export function chTime(epochMs: number): string {
  if (epochMs === lastCh.ms) return lastCh.text;
  const iso = isoTime(epochMs);
  const text = iso.length === 24 ? `${iso.slice(0, 10)} ${iso.slice(11, 23)}` : iso.replace('T', ' ').replace('Z', '');
  lastCh = { ms: epochMs, text };
  return text;
}
