import { createHash } from 'node:crypto';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { bundleAtRuntime } from '../../platform/bundle-at-runtime.ts';
import { fromSourceRoot } from '../../platform/source-root.ts';

/**
 * The web console (console/app/, Preact + TSX) bundled once when the API starts: esbuild, in memory, in well under a
 * second, so `npm start` needs no build step and the sources are the only copy. The bundle's files get content
 * hashes in their names (served `immutable`); index.html names them and is revalidated on every load.
 */
export interface ConsoleAsset {
  name: string;
  contentType: string;
  body: Buffer;
  gzip: Buffer;
}

export interface ConsoleBundle {
  /** By file name (`console.<hash>.js`, `console.<hash>.css`). */
  assets: Map<string, ConsoleAsset>;
  indexHtml: string;
  /** The script the page loads first: what the JavaScript budget counts. */
  entryScript: ConsoleAsset;
}

export const CONSOLE_ENTRY = fromSourceRoot('console', 'app', 'main.tsx');
export const CONSOLE_ASSET_PREFIX = '/console/assets/';

const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

let built: Promise<ConsoleBundle> | undefined;

/** The bundle, built once per process (every API app in a process serves the same one). */
export function consoleBundle(): Promise<ConsoleBundle> {
  built ??= buildConsole().catch((err) => {
    built = undefined;
    throw err;
  });
  return built;
}

export async function buildConsole(): Promise<ConsoleBundle> {
  const out = await bundleAtRuntime({
    entryPoints: { console: CONSOLE_ENTRY },
    bundle: true,
    minify: true,
    format: 'esm',
    target: 'es2020',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    define: { 'process.env.NODE_ENV': '"production"' },
    write: false,
    outdir: 'out',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const assets = new Map<string, ConsoleAsset>();
  let script: ConsoleAsset | undefined;
  let style: ConsoleAsset | undefined;
  for (const file of out.outputFiles) {
    const ext = path.extname(file.path);
    const body = Buffer.from(file.contents);
    const hash = createHash('sha256').update(body).digest('hex').slice(0, 12);
    const asset: ConsoleAsset = {
      name: `console.${hash}${ext}`,
      contentType: TYPES[ext] ?? 'application/octet-stream',
      body,
      gzip: gzipSync(body, { level: 9 }),
    };
    assets.set(asset.name, asset);
    if (ext === '.js') script = asset;
    if (ext === '.css') style = asset;
  }
  if (!script) throw new Error('the console bundle has no script');
  const indexHtml = [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<title>Console</title>',
    // No favicon request (and no 404 for it): an empty icon inline.
    '<link rel="icon" href="data:,">',
    style ? `<link rel="stylesheet" href="${CONSOLE_ASSET_PREFIX}${style.name}">` : '',
    `<script type="module" src="${CONSOLE_ASSET_PREFIX}${script.name}"></script>`,
    '</head>',
    '<body><div id="app"><noscript>The console needs JavaScript.</noscript></div></body>',
    '</html>',
  ].join('\n');
  return { assets, indexHtml, entryScript: script };
}
