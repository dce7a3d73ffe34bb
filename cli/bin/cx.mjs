#!/usr/bin/env node
// cx: the packed package runs its bundle (dist/cx.mjs, built by `npm pack`); a clone of the repository runs the
// TypeScript source through tsx, so `npx cx` works right after `npm install`.
import { existsSync } from 'node:fs';

const dist = new URL('../dist/cx.mjs', import.meta.url);
let main;
if (existsSync(dist)) main = await import(dist.href);
else {
  const { register } = await import('tsx/esm/api');
  register();
  main = await import(new URL('../src/main.ts', import.meta.url).href);
}
process.exit(await main.run(process.argv));
