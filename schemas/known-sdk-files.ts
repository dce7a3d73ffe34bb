/**
 * Files of error-reporting SDKs that run inside a page or a process: their frames are never the app's code, so never
 * an issue's culprit (the processor's stack rule) nor shown as application frames (the console). A Sentry browser
 * SDK's `captureMessage` records its own frames on top: without this, the SDK was the culprit of every message.
 *   - Sentry: `@sentry/` packages, Sentry's CDN bundles, a bundle named after it (`sentry.js`, `sentry.min.js`,
 *     `vendor-sentry.3f9a2c.js`); an app's own `sentry-setup.js` or `sentry-node-app.mjs` is the app's code
 *   - PostHog: `posthog*.js` and its asset host
 *   - ours: cx.js however it is served (`/v1/w/cx.js`, `cx.<hash>.js`)
 * Matched against a frame's file, lower-cased, query string removed. zod-free: the console imports it too.
 */
export const KNOWN_SDK_FILE =
  /(^|[\/\\])@sentry[\/\\]|sentry-cdn\.com\/|(^|[\/\\])(\w+[-.~])?sentry(\.min|\.bundle|[.-][0-9a-f]{6,})*\.m?js$|(^|[\/\\])posthog(\.min|\.full|[.-][0-9a-f]{6,})*\.m?js$|\.i\.posthog\.com\/|(^|[\/\\])cx(\.min|\.[0-9a-f]{8,})?\.js$/;

/**
 * Functions of Sentry's SDKs that call the app's code, named in its frames wherever the SDK was bundled (issue 40): the
 * `wrap` helper's `sentryWrapped` (timers, event listeners, requestAnimationFrame: Sentry's own third-party filter
 * knows it by this name), a `sentryWrapper`, and the instrument helpers that patch console, DOM events, errors, fetch,
 * history and XHR (@sentry/core, @sentry/browser-utils: `instrumentDOM`, `globalDOMEventHandler`, `triggerHandlers`,
 * `historyReplacementFunction`, the `_wrap*` of the browser's try/catch integration). Matched against a frame's
 * function name, also as a method (`HTMLDocument.sentryWrapped`, `Object.sentryWrapped`).
 */
export const KNOWN_SDK_FUNCTION =
  /(^|\.)(sentryWrapped|sentryWrapper|globalDOMEventHandler|triggerHandlers|historyReplacementFunction|_wrapEventTarget|_wrapTimeFunction|_wrapRAF|_wrapXHR|_wrapFetch|instrument(Console|DOM|Error|Fetch|History|UnhandledRejection|XHR))$/;
