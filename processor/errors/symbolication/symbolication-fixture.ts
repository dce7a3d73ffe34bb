import { mkdtemp, readdir, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import vm from 'node:vm';
import { build } from 'esbuild';

/**
 * A small browser app bundled the way sites are built (esbuild: minified, content-hashed names, external source
 * maps with sourcesContent), and the stack it throws with when run at a URL: what the symbolication tests, the bench
 * and the end-to-end tests feed the processor. `variant` changes an unrelated module, so every hash moves.
 */
export const APP_SOURCES = {
  'src/main.ts': `import { formatTotal } from './cart';
import { banner } from './banner';
export function handleCheckout(items: number[]) {
  document.title = banner();
  return formatTotal(items);
}
(globalThis as any).checkout = handleCheckout;
`,
  'src/cart.ts': `export function formatTotal(items: number[]) {
  const total = sumPrices(items);
  return '$' + total.toFixed(2);
}
function sumPrices(items: number[]) {
  let total = 0;
  for (const price of items) {
    if (price < 0) {
      // The bug: a refund line is not a price.
      throw new RangeError('negative price ' + price);
    }
    total += price;
  }
  return total;
}
`,
};

export interface BuiltApp {
  dir: string;
  /** The bundle's path under the output (`/assets/main-ABCD1234.js`). */
  servedPath: string;
  js: string;
  map: Buffer;
  mapName: string;
  close(): Promise<void>;
}

export async function buildApp(variant: string, opts: { debugId?: string } = {}): Promise<BuiltApp> {
  const dir = await mkdtemp(path.join(tmpdir(), 'symbolication-app-'));
  for (const [file, text] of Object.entries(APP_SOURCES)) {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  }
  await writeFile(path.join(dir, 'src/banner.ts'), `export function banner() { return ${JSON.stringify(`Shop ${variant}`)}; }\n`);
  const bundle = await bundleApp(dir);
  let js = bundle.js;
  let map = bundle.map;
  const jsName = bundle.jsName;
  if (opts.debugId) {
    js += `\n//# debugId=${opts.debugId}\n`;
    map = Buffer.from(JSON.stringify({ ...JSON.parse(map.toString()), debugId: opts.debugId }));
  }
  return {
    dir: path.join(dir, 'dist'),
    servedPath: `/assets/${jsName}`,
    js,
    map,
    mapName: `assets/${jsName}.map`,
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

/**
 * `src/main.ts` of `dir` bundled the way sites are built: esbuild, minified, `[name]-[hash]` names under
 * `dist/assets`, an external map with sourcesContent.
 */
export async function bundleApp(dir: string): Promise<{ js: string; map: Buffer; jsName: string }> {
  await build({
    absWorkingDir: dir,
    entryPoints: ['src/main.ts'],
    bundle: true,
    minify: true,
    sourcemap: true,
    format: 'iife',
    outdir: 'dist/assets',
    entryNames: '[name]-[hash]',
    logLevel: 'silent',
  });
  const out = path.join(dir, 'dist/assets');
  const jsName = (await readdir(out)).find((n) => n.endsWith('.js'))!;
  return { js: await readFile(path.join(out, jsName), 'utf8'), map: await readFile(path.join(out, `${jsName}.map`)), jsName };
}

/** Run the bundle as if a browser loaded it from `url` and call the checkout with a refund line: the V8 stack it throws. */
export function stackOf(app: BuiltApp, url: string): { name: string; message: string; stack: string } {
  const context: Record<string, unknown> = { document: { title: '' } };
  context.globalThis = context;
  vm.runInNewContext(app.js, context, { filename: url });
  try {
    (context.checkout as (items: number[]) => unknown)([3, -2]);
  } catch (err) {
    const e = err as Error;
    return { name: e.name, message: e.message, stack: e.stack ?? '' };
  }
  throw new Error('the app did not throw');
}
