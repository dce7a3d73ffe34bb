import type { ErrorsClient } from './src/errors.ts';
import { startSession } from './src/sessions.ts';
import { createTransport, safe } from './src/transport.ts';

/**
 * cx-sessions.js: the add-on that turns sessions on for the served cx.js (issue 40), at `/v1/w/cx-sessions.js` (and
 * under a versioned, immutable name). cx.js is held to 3 KB gzipped and cannot hold them, so loading this script after
 * it is the one option: `<script src="/v1/w/cx.js"></script><script src="/v1/w/cx-sessions.js"></script>`.
 *  1. Without cx.js on the page (no `window.cx.errors`), or when it already ran (`window.cx.sessions`): nothing.
 *  2. One session for this page load, through the package's own src/sessions.ts, posted to `/service/v1/sessions/i`
 *     on the page's origin as cx.js posts its errors (src/transport.ts); `did` is the visitor id cx.js keeps in
 *     localStorage (`cx_id`, src/identity.ts), none when the page cannot read it.
 *  3. `crashed` at an unhandled error (window `error` with an error, `unhandledrejection`), as cx.js captures them.
 *  4. `errored` when the page reports one by hand: `cx.errors.captureException` / `captureMessage` are wrapped, still
 *     returning what they returned.
 *  5. The terminal update on pagehide (sessions.ts). Never throws into the page.
 */
type Cx = { errors?: ErrorsClient; sessions?: boolean };
try {
  const cx = (window as unknown as { cx?: Cx }).cx;
  const errors = cx && cx.errors;
  if (cx && errors && !cx.sessions) {
    cx.sessions = true;
    const note = safe(startSession(createTransport(), safe(() => localStorage.getItem('cx_id'))() || undefined));
    addEventListener('error', (e) => (e.error || e.message) && note(true));
    addEventListener('unhandledrejection', () => note(true));
    for (const name of ['captureException', 'captureMessage'] as const) {
      const by = errors[name];
      errors[name] = function (this: unknown, ...a: Parameters<typeof by>) {
        note();
        return by.apply(this, a);
      };
    }
  }
} catch {
  // never into the page
}
