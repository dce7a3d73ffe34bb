// Compiles the service for `npm start` (issue 44): one esbuild pass of the TypeScript source into dist/service/,
// npm packages left as imports (node_modules as installed), the lazily loaded adapters kept lazy (code splitting),
// and the embedded database's worker as an entry of its own. Running compiled JavaScript
// instead of the source under tsx saves the loader's thread, its esbuild processes and the module graph compiled
// per thread (bench/README.md, "Footprint"). A run with nothing changed writes nothing (~1 s): the output is built
// beside dist/service and swapped in only when it differs, so a service starting from dist/service meanwhile (a
// second `npm start`, the tests) never reads a half-written file.
import { mkdir, mkdtemp, readdir, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';

const root = path.resolve(import.meta.dirname, '..');
const target = path.join(root, 'dist', 'service');
await mkdir(path.join(root, 'dist'), { recursive: true });
const fresh = await mkdtemp(path.join(root, 'dist', '.service-'));

try {
  await build({
    absWorkingDir: root,
    entryPoints: {
      main: 'service/main.ts',
      // Started by platform/adapters/relational/pglite-worker-store.ts as `./pglite-worker.js` beside its own chunk.
      'pglite-worker': 'platform/adapters/relational/pglite-worker.ts',
    },
    outdir: fresh,
    bundle: true,
    splitting: true,
    packages: 'external',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  if (await sameFiles(fresh, target)) await rm(fresh, { recursive: true, force: true });
  else {
    const old = `${fresh}.old`;
    await rename(target, old).catch(() => undefined);
    await rename(fresh, target);
    await rm(old, { recursive: true, force: true });
  }
} catch (err) {
  await rm(fresh, { recursive: true, force: true });
  throw err;
}

async function sameFiles(a, b) {
  const names = (await readdir(a)).sort();
  const others = await readdir(b).catch(() => undefined);
  if (!others || others.sort().join('\0') !== names.join('\0')) return false;
  for (const n of names) {
    const [x, y] = await Promise.all([readFile(path.join(a, n)), readFile(path.join(b, n))]);
    if (!x.equals(y)) return false;
  }
  return true;
}
