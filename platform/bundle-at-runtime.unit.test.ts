import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { bundleAtRuntime, bundlesInFlight } from './bundle-at-runtime.ts';

/** This process's children that are esbuild's service. */
function esbuildChildren(): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').trim();
      const [, comm, rest] = /^\d+ \((.*)\) (.*)$/.exec(stat)!;
      if (comm === 'esbuild' && Number(rest!.split(' ')[1]) === process.pid) out.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

it("stops esbuild's service process once the last bundle in flight is done (it stayed behind for the service's life)", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bundle-'));
  await writeFile(path.join(dir, 'a.ts'), 'export const a: number = 1;\nconsole.log(a);\n');
  const options = { entryPoints: [path.join(dir, 'a.ts')], bundle: true, write: false as const, logLevel: 'silent' as const };
  const both = Promise.all([bundleAtRuntime(options), bundleAtRuntime(options)]);
  expect(bundlesInFlight()).toBe(2);
  const [one, two] = await both;
  expect(one.outputFiles[0]!.text).toContain('console.log');
  expect(two.outputFiles[0]!.text).toContain('console.log');
  expect(bundlesInFlight()).toBe(0);
  await expect.poll(esbuildChildren).toEqual([]);
  // A later bundle starts it again.
  expect((await bundleAtRuntime(options)).outputFiles[0]!.text).toContain('console.log');
});
