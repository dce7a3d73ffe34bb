import { createClient } from './src/index.ts';

/**
 * cx.js: the browser client (spec §7.1) as the service serves it, at `/v1/w/cx.js` (and under a versioned, immutable
 * name): the package's `init()` (src/index.ts) on `window.cx`. It talks only to `/service/v1/...` on the page's own
 * origin, where the platform attaches the project's ingest key (so no key is in the page), or a Node app relays it
 * (@cx/node's forwarder).
 *
 * `cx.errors.captureException(err, { path, extra })`, `captureMessage(text, { extra })`, `flush()`;
 * `cx.capture(event, properties)`; `cx.flags.isEnabled(key)`, `getVariant(key)`, `getPayload(key)`, `ready()`;
 * `cx.identify(id)`; `cx.flush()`; `cx.misrouted`. How events are queued and sent: src/transport.ts.
 */
const w = window as unknown as { cx?: Record<string, unknown> };
try {
  // Loaded twice: keep the first.
  if (!(w.cx || {}).errors) {
    const cx = createClient({}, {});
    w.cx = Object.defineProperties({ ...w.cx }, Object.getOwnPropertyDescriptors(cx));
  }
} catch {
  // never into the page
}
