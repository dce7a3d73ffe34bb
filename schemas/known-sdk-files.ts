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
