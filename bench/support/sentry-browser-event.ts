/** A browser error as @sentry/browser 11 reports it, for the benches that send Sentry envelopes. */

export const FRAMES = Array.from({ length: 12 }, (_, i) => ({
  filename: `https://app.example.com/assets/chunk-${i.toString(16)}a1b2c3.js`,
  function: `handler${i}`,
  lineno: 100 + i,
  colno: 20 + i,
  in_app: true,
}));

/**
 * The envelope of one error event as @sentry/browser 11 sends one: the exception, frames, request, contexts, a few
 * breadcrumbs. `timestamp` in seconds; the breadcrumbs one a second from its whole second.
 */
export function browserEventEnvelope(opts: { id: string; timestamp: number; url: string; sentAt: string }): string {
  const event = {
    event_id: opts.id,
    timestamp: opts.timestamp,
    platform: 'javascript',
    level: 'error',
    release: '0123456789abcdef0123456789abcdef01234567',
    environment: 'production',
    sdk: { name: 'sentry.javascript.browser', version: '11.12.0', integrations: ['InboundFilters', 'BrowserSession', 'Breadcrumbs'] },
    exception: {
      values: [
        {
          type: 'TypeError',
          value: "Cannot read properties of undefined (reading 'id')",
          stacktrace: { frames: FRAMES },
          mechanism: { type: 'onerror', handled: false },
        },
      ],
    },
    request: { url: opts.url, headers: { 'User-Agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0' } },
    contexts: { trace: { trace_id: 'b'.repeat(32), span_id: 'c'.repeat(16) } },
    breadcrumbs: Array.from({ length: 8 }, (_, i) => ({ timestamp: Math.floor(opts.timestamp) + i, category: 'ui.click', message: `button#save-${i}` })),
  };
  return [
    JSON.stringify({ event_id: opts.id, sent_at: opts.sentAt, sdk: { name: 'sentry.javascript.browser', version: '11.12.0' } }),
    '{"type":"event"}',
    JSON.stringify(event),
  ].join('\n');
}
