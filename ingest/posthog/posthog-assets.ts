import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { promisify } from 'node:util';
import { gzip } from 'node:zlib';
import { publicBaseUrl, type Config } from '../../platform/config.ts';
import { serviceHostRule } from '../../platform/sites/service-hosts.ts';
import { EDGE_PATHS } from '../../schemas/api/edge.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import type { EdgeContext } from '../batch-route.ts';
import { immediateReply, send, sendError, watchedReply, type Headers } from '../http/uws-reply.ts';

/**
 * What PostHog's HTML snippet and posthog-js load from `api_host` beside capture and flags (issue 40), so a page with
 * PostHog's snippet, unchanged but for key and `api_host`, loads the SDK and logs no error:
 * - `GET /static/<name>` (and `/static/<version>/<name>`, posthog-js's strict script versioning): posthog-js's own files
 *   from the installed `posthog-js` package (pinned in package.json's dependencies): the snippet's `array.js` and the
 *   extensions posthog-js loads lazily (surveys, recorder, exception autocapture, web vitals, dead clicks...), and
 *   their source maps. Only the names of POSTHOG_SCRIPTS: a name from the request is looked up, never joined to a
 *   directory. A file is read (and gzipped) the first time it is asked for and kept, so memory is bounded by that list.
 * - `GET /array/<key>/config` (JSON) and `/array/<key>/config.js` (the script that sets
 *   `window._POSTHOG_REMOTE_CONFIG[<key>]`, which posthog-js loads first): posthog-js's remote config with what the
 *   service does not have switched off (POSTHOG_REMOTE_CONFIG). A key no project has: 404.
 * For `/static/` in order:
 *   1. ours to answer: an allowed name, a version-shaped version, on the service's own host (else the next route
 *      answers it: a site's own `/static/` files, the API)
 *   2. GET or HEAD                                                                             405
 *   3. the file (read on first ask), 304 on a matching If-None-Match, gzip when taken; CORS `*`
 */

/** posthog-js's browser scripts the service serves: the snippet's bundles and every extension posthog-js loads by name. */
export const POSTHOG_SCRIPTS = [
  // the snippet's loader (`/static/array.js`) and its variants a page may name instead
  'array.js',
  'array.full.js',
  'array.no-external.js',
  'array.full.no-external.js',
  'array.full.es5.js',
  // loaded by posthog-js as `loadExternalDependency(kind)`: `/static/<kind>.js`
  'surveys.js',
  'product-tours.js',
  'conversations.js',
  'logs.js',
  'recorder.js',
  'recorder-v2.js',
  'posthog-recorder.js',
  'lazy-recorder.js',
  'exception-autocapture.js',
  'dead-clicks-autocapture.js',
  'tracing-headers.js',
  'web-vitals.js',
  'web-vitals-with-attribution.js',
  'web-vitals-soft-navs.js',
  'web-vitals-with-attribution-soft-navs.js',
  'intercom-integration.js',
  'crisp-chat-integration.js',
] as const;

const require = createRequire(import.meta.url);
/** The installed posthog-js: its version, and where its built files are. */
export const POSTHOG_JS_VERSION: string = require('posthog-js/package.json').version;
const DIST = path.join(path.dirname(require.resolve('posthog-js/package.json')), 'dist');

/** A version segment as posthog-js writes it (`posthog.version`): semver, maybe with a pre-release. */
const VERSION = /^\d{1,4}\.\d{1,4}\.\d{1,4}(?:-[0-9A-Za-z.-]{1,40})?$/;
const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, max-age=300, must-revalidate';
const CORS: Headers = [
  ['Access-Control-Allow-Origin', '*'],
  ['Cross-Origin-Resource-Policy', 'cross-origin'],
];

export interface PostHogFile {
  body: Buffer;
  gzip: Buffer;
  etag: string;
  contentType: string;
}

/** The allowed names (scripts and their `.map`), each read from posthog-js's dist on first ask and kept. */
export function posthogFiles(dist = DIST, names: readonly string[] = POSTHOG_SCRIPTS) {
  const allowed = new Set(names.flatMap((n) => [n, `${n}.map`]));
  const loaded = new Map<string, Promise<PostHogFile | null>>();
  const gz = promisify(gzip);
  return {
    has: (name: string) => allowed.has(name),
    /** The file, or null when the installed package lacks it; undefined for a name not allowed. */
    get(name: string): Promise<PostHogFile | null> | undefined {
      if (!allowed.has(name)) return undefined;
      let file = loaded.get(name);
      if (!file) {
        file = (async () => {
          const body = await readFile(path.join(dist, name)).catch(() => null);
          if (!body) return null;
          const hash = createHash('sha256').update(body).digest('hex').slice(0, 16);
          const contentType = name.endsWith('.map') ? 'application/json' : 'text/javascript; charset=utf-8';
          return { body, gzip: await gz(body, { level: 9 }), etag: `"${hash}"`, contentType };
        })();
        loaded.set(name, file);
      }
      return file;
    },
  };
}

/** The hosts that are the service's own (its PUBLIC_BASE_URL host, localhost, IP literals), not a tenant's site. */
export function serviceHostOf(config: Pick<Config, 'PUBLIC_BASE_URL' | 'PORT' | 'SITES_DOMAIN'>): (hostHeader: string) => boolean {
  const reserved = serviceHostRule(config);
  const own = new URL(publicBaseUrl(config)).hostname.toLowerCase();
  const sites = config.SITES_DOMAIN.toLowerCase();
  return (hostHeader) => {
    const host = hostHeader.toLowerCase().replace(/:\d*$/, '').replace(/\.$/, '');
    if (!host || host === own) return true;
    if (host.endsWith(`.${sites}`)) return false; // `<slug>.<SITES_DOMAIN>`: a site
    return reserved(host) !== undefined;
  };
}

/**
 * posthog-js's remote config (`RemoteConfig` of @posthog/browser-common), with what the service does not have
 * switched off: session recording (no `/s/`), surveys, product tours, heatmaps, dead clicks, web vitals, exception
 * autocapture, console logs, conversations, site apps. Autocapture and feature flags stay on.
 */
export const POSTHOG_REMOTE_CONFIG = (token: string) => ({
  token,
  supportedCompression: ['gzip', 'gzip-js'],
  hasFeatureFlags: true,
  autocapture_opt_out: false,
  captureDeadClicks: false,
  capturePerformance: false,
  autocaptureExceptions: false,
  errorTracking: { autocaptureExceptions: false, suppressionRules: [] },
  logs: { captureConsoleLogs: false },
  analytics: { endpoint: '/i/v0/e/' },
  elementsChainAsString: true,
  heatmaps: false,
  sessionRecording: false,
  surveys: false,
  productTours: false,
  conversations: false,
  defaultIdentifiedOnly: true,
  isAuthenticated: false,
  toolbarParams: {},
  siteApps: [],
});

/** `/array/<key>/config.js`: what PostHog's CDN answers, the config assigned for posthog-js to find (no site apps). */
export function posthogRemoteConfigScript(token: string): string {
  const json = (v: unknown) =>
    JSON.stringify(v)
      .replace(/</g, '\\u003c')
      .replace(/\u2028/g, '\\u2028')
      .replace(/\u2029/g, '\\u2029');
  return `(function(){window._POSTHOG_REMOTE_CONFIG=window._POSTHOG_REMOTE_CONFIG||{};window._POSTHOG_REMOTE_CONFIG[${json(token)}]={config:${json(POSTHOG_REMOTE_CONFIG(token))},siteApps:[]};})();\n`;
}

export function registerPostHogAssets(edge: Pick<EdgeContext, 'app' | 'cache' | 'log'> & { platform: Pick<EdgeContext['platform'], 'config'> }): void {
  const { app, cache, log } = edge;
  const files = posthogFiles();
  const ours = serviceHostOf(edge.platform.config);
  const knownKey = (token: string) => token.startsWith(TOKEN_PREFIX.ingestKey) && cache.byToken(token) !== undefined;

  app.get(EDGE_PATHS.posthogConfig, (res, req) => {
    const origin = req.getHeader('origin');
    const cors: Headers = origin
      ? [
          ['Access-Control-Allow-Origin', origin],
          ['Vary', 'Origin'],
        ]
      : [];
    const token = req.getParameter(0) ?? '';
    if (!knownKey(token)) return sendError(res, immediateReply(req), 'not_found', 'no project has this key', cors);
    send(
      res,
      immediateReply(req),
      200,
      [['Content-Type', 'application/json'], ['Cache-Control', 'public, max-age=300'], ...cors],
      JSON.stringify(POSTHOG_REMOTE_CONFIG(token)),
    );
  });

  app.get(EDGE_PATHS.posthogConfigScript, (res, req) => {
    const token = req.getParameter(0) ?? '';
    if (!knownKey(token)) return sendError(res, immediateReply(req), 'not_found', 'no project has this key', CORS);
    send(
      res,
      immediateReply(req),
      200,
      [['Content-Type', 'text/javascript; charset=utf-8'], ['Cache-Control', 'public, max-age=300'], ['X-Content-Type-Options', 'nosniff'], ...CORS],
      posthogRemoteConfigScript(token),
    );
  });

  for (const pattern of [EDGE_PATHS.posthogStatic, EDGE_PATHS.posthogStaticVersioned]) {
    const versioned = pattern === EDGE_PATHS.posthogStaticVersioned;
    app.any(pattern, (res, req) => {
      // 1. ours to answer
      const name = req.getParameter(versioned ? 1 : 0) ?? '';
      const version = versioned ? (req.getParameter(0) ?? '') : POSTHOG_JS_VERSION;
      if (!files.has(name) || !VERSION.test(version) || !ours(req.getHeader('host'))) return void req.setYield(true);
      // 2. method
      const method = req.getMethod();
      if (method !== 'get' && method !== 'head') return sendError(res, immediateReply(req), 'method_not_allowed', 'use GET', [['Allow', 'GET, HEAD'], ...CORS]);
      // 3. the file: an exact version's URL never changes; the unversioned one (and another version's) changes on upgrade
      const cacheControl = versioned && version === POSTHOG_JS_VERSION ? IMMUTABLE : REVALIDATE;
      const ifNoneMatch = req.getHeader('if-none-match');
      const takesGzip = /\bgzip\b/i.test(req.getHeader('accept-encoding'));
      const st = watchedReply(res, req);
      files
        .get(name)!
        .then((file) => {
          if (!file) return sendError(res, st, 'not_found', 'this posthog-js file is not in the installed package', CORS);
          const headers: Headers = [
            ['Content-Type', file.contentType],
            ['Cache-Control', cacheControl],
            ['ETag', file.etag],
            ['Vary', 'Accept-Encoding'],
            ['X-Content-Type-Options', 'nosniff'],
            ...CORS,
          ];
          if (ifNoneMatch && ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === file.etag)) return send(res, st, 304, headers);
          if (takesGzip) headers.push(['Content-Encoding', 'gzip']);
          send(res, st, 200, headers, takesGzip ? file.gzip : file.body);
        })
        .catch((err) => {
          log.error({ err, name }, 'serving a posthog-js file failed');
          sendError(res, st, 'internal', 'internal error', CORS);
        });
    });
  }
}
