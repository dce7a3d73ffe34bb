import type { Attempt } from '../../schemas/api/webhooks.ts';

/**
 * What the webhook pages say that depends on the data: the URL rule as this deployment applies it, and when a
 * pending delivery's next attempt is due.
 */

/** The URL field's hint: loopback receivers are refused unless the deployment says it takes them (ALLOW_LOCAL_OUTBOUND). */
export function receiverRule(localReceiversAllowed: boolean): string {
  return localReceiversAllowed
    ? 'https, or http:// and loopback receivers on this development setup (ALLOW_LOCAL_OUTBOUND); private ranges are refused'
    : 'https; private and loopback hosts are refused';
}

/**
 * The "next attempt" note of each row of the delivery log (newest first): said once per delivery, on its newest
 * attempt, and only while the delivery is pending, with the delivery's own due time. An older attempt's schedule is
 * history, so a row already retried says nothing of it.
 */
export function nextAttemptNotes(attempts: Attempt[], timeText: (iso: string) => string): Map<Attempt, string> {
  const notes = new Map<Attempt, string>();
  const seen = new Set<string>();
  for (const a of attempts) {
    if (seen.has(a.deliveryId)) continue;
    seen.add(a.deliveryId);
    if (a.deliveryStatus === 'pending' && a.deliveryNextAttemptAt) notes.set(a, `next ${timeText(a.deliveryNextAttemptAt)}`);
  }
  return notes;
}
