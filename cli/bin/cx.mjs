#!/usr/bin/env node
// cx: a clone of the repository runs the TypeScript source through tsx, so `npx cx` works right after `npm install`;
// the packed package (no src/, only bin/ and dist/) runs its bundle, dist/cx.mjs, built by `npm pack`. The source
// wins where it exists, so a bundle a pack left in the clone (or one being written) is never half-read.
import { existsSync } from 'node:fs';

const source = new URL('../src/main.ts', import.meta.url);
let main;
if (existsSync(source)) {
  const { register } = await import('tsx/esm/api');
  register();
  main = await import(source.href);
} else main = await import(new URL('../dist/cx.mjs', import.meta.url).href);
process.exit(await main.run(process.argv));
