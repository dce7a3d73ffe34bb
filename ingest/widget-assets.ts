import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { bundleAtRuntime } from '../platform/bundle-at-runtime.ts';
import type uWS from 'uWebSockets.js';
import { EDGE_SUPPORT_PATHS } from '../schemas/api/route-table.ts';
import { immediateReply, send, sendError, type Headers } from './http/uws-reply.ts';
import { fromSourceRoot } from '../platform/source-root.ts';

/**
 * Public widget assets (§4.2 `/v1/w/*`): the browser client cx.js (sdk/browser/cx.ts) and its sessions add-on
 * cx-sessions.js (sdk/browser/cx-sessions.ts, issue 40), each bundled and minified once when the edge starts (esbuild,
 * in memory) and served from memory:
 * - `/v1/w/cx.<hash>.js` (`cx-sessions.<hash>.js`): this build, forever (`immutable`): the URL to put in pages;
 * - `/v1/w/cx.js` (`cx-sessions.js`): the current build, revalidated after 5 minutes (ETag / 304);
 * - `/v1/w/manifest.json`: which versioned URL is current for each.
 * gzip when the client takes it. Scripts are public, so any origin may load them.
 */
export interface WidgetAsset {
  name: string;
  versionedName: string;
  etag: string;
  body: Buffer;
  gzip: Buffer;
}

export const CX_SOURCE = fromSourceRoot('sdk', 'browser', 'cx.ts');
export const CX_SESSIONS_SOURCE = fromSourceRoot('sdk', 'browser', 'cx-sessions.ts');
export const WIDGET_PREFIX = EDGE_SUPPORT_PATHS.widgetPrefix;

/** The minified bundle of a browser entry point (also what the size test reads). */
export async function bundleBrowserScript(entry: string): Promise<Buffer> {
  const out = await bundleAtRuntime({
    entryPoints: [entry],
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2019',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return Buffer.from(out.outputFiles[0]!.contents);
}

async function widgetAsset(stem: string, entry: string): Promise<WidgetAsset> {
  const body = await bundleBrowserScript(entry);
  const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { name: `${stem}.js`, versionedName: `${stem}.${hash}.js`, etag: `"${hash}"`, body, gzip: gzipSync(body, { level: 9 }) };
}

export async function buildWidgetAssets(): Promise<WidgetAsset[]> {
  return Promise.all([widgetAsset('cx', CX_SOURCE), widgetAsset('cx-sessions', CX_SESSIONS_SOURCE)]);
}

const IMMUTABLE = 'public, max-age=31536000, immutable';
const REVALIDATE = 'public, max-age=300, must-revalidate';

export function registerWidgetAssets(app: uWS.TemplatedApp, assets: WidgetAsset[]): void {
  const byName = new Map<string, { asset: WidgetAsset; cache: string }>();
  for (const asset of assets) {
    byName.set(asset.name, { asset, cache: REVALIDATE });
    byName.set(asset.versionedName, { asset, cache: IMMUTABLE });
  }
  const manifest = JSON.stringify({ files: Object.fromEntries(assets.map((a) => [a.name, `${WIDGET_PREFIX}${a.versionedName}`])) });

  app.get(`${WIDGET_PREFIX}manifest.json`, (res) => {
    send(
      res,
      immediateReply(),
      200,
      [
        ['Content-Type', 'application/json'],
        ['Cache-Control', 'no-cache'],
        ['Access-Control-Allow-Origin', '*'],
      ],
      manifest,
    );
  });

  app.any(`${WIDGET_PREFIX}*`, (res, req) => {
    const st = immediateReply(req);
    const method = req.getMethod();
    if (method !== 'get' && method !== 'head') return sendError(res, st, 'method_not_allowed', 'use GET', [['Allow', 'GET, HEAD']]);
    const found = byName.get(req.getUrl().slice(WIDGET_PREFIX.length));
    if (!found) return sendError(res, st, 'not_found', 'no such widget asset');
    const { asset, cache } = found;
    const headers: Headers = [
      ['Content-Type', 'text/javascript; charset=utf-8'],
      ['Cache-Control', cache],
      ['ETag', asset.etag],
      ['Vary', 'Accept-Encoding'],
      ['Access-Control-Allow-Origin', '*'],
      ['Cross-Origin-Resource-Policy', 'cross-origin'],
      ['X-Content-Type-Options', 'nosniff'],
    ];
    const inm = req.getHeader('if-none-match');
    if (inm && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === asset.etag)) return send(res, st, 304, headers);
    const gzip = /\bgzip\b/i.test(req.getHeader('accept-encoding'));
    if (gzip) headers.push(['Content-Encoding', 'gzip']);
    send(res, st, 200, headers, gzip ? asset.gzip : asset.body);
  });
}
