// Builds one SDK package into its dist/ (run by `npm pack` through prepack, and by `npm run build:sdk`):
//   1. esbuild: each entry as ESM (.js) and CommonJS (.cjs), everything of ours bundled in, no runtime dependency;
//   2. tsc --emitDeclarationOnly (the package's tsconfig.build.json): .d.ts beside them, their relative imports
//      rewritten from .ts to .js, and a .d.cts copy of each entry's for `require` under NodeNext resolution.
//   3. with `--script <file>`: that file also as one minified script for a <script> tag (dist/<name>.js, no types).
// Usage: node ../build-package.mjs <platform: node|browser> <entry> [<entry> ...] [--script <file>]   (paths relative to the package)
import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { build } from 'esbuild';

const args = process.argv.slice(2);
const scriptAt = args.indexOf('--script');
const script = scriptAt === -1 ? undefined : args.splice(scriptAt, 2)[1];
const [platform, ...entries] = args;
const pkg = process.cwd();
const dist = path.join(pkg, 'dist');
rmSync(dist, { recursive: true, force: true });

for (const entry of entries) {
  const name = path.basename(entry, '.ts');
  const common = {
    entryPoints: [path.join(pkg, entry)],
    bundle: true,
    platform,
    target: platform === 'node' ? 'node20' : 'es2020',
    legalComments: 'none',
    logLevel: 'warning',
  };
  await build({ ...common, format: 'esm', outfile: path.join(dist, `${name}.js`) });
  await build({ ...common, format: 'cjs', outfile: path.join(dist, `${name}.cjs`) });
}

if (script)
  await build({
    entryPoints: [path.join(pkg, script)],
    bundle: true,
    minify: true,
    format: 'iife',
    target: 'es2019',
    legalComments: 'none',
    logLevel: 'warning',
    outfile: path.join(dist, `${path.basename(script, '.ts')}.js`),
  });

const tsc = path.join(path.dirname(createRequire(import.meta.url).resolve('typescript/package.json')), 'bin', 'tsc');
execFileSync(process.execPath, [tsc, '-p', path.join(pkg, 'tsconfig.build.json')], { stdio: 'inherit' });
for (const file of readdirSync(dist).filter((f) => f.endsWith('.d.ts'))) {
  const full = path.join(dist, file);
  writeFileSync(full, readFileSync(full, 'utf8').replace(/(from\s+['"]\.{1,2}\/[^'"]+)\.ts(['"])/g, '$1.js$2'));
}
for (const entry of entries) {
  const name = path.basename(entry, '.ts');
  copyFileSync(path.join(dist, `${name}.d.ts`), path.join(dist, `${name}.d.cts`));
}
