import { lstat, open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { installDigest, type RestoredCache } from '../build-cache/build-cache.ts';
import { detectFramework, NPM_KEEP_INSTALL, type DetectedFramework } from './detect-framework.ts';

/** The largest `package.json` read (a real one is a few KB); a larger one detects nothing. */
export const PACKAGE_JSON_MAX_BYTES = 1024 * 1024;

/**
 * What a checkout builds as (detect-framework.ts), read from the tenant's tree on the host: its `package.json` only
 * when it is a regular file (never a link followed out of the tree) within PACKAGE_JSON_MAX_BYTES, and the names at
 * its root for the lockfile. Undefined when it names no known framework, is too large or is no JSON (`note` says why).
 */
export async function frameworkOfCheckout(src: string, note: (text: string) => void, keptModules = false): Promise<DetectedFramework | undefined> {
  const file = path.join(src, 'package.json');
  const st = await lstat(file).catch(() => undefined);
  const files = await readdir(src).catch(() => [] as string[]);
  if (!st) return detectFramework(undefined, files);
  if (!st.isFile() || st.size > PACKAGE_JSON_MAX_BYTES) {
    note(`package.json is not a regular file of at most ${PACKAGE_JSON_MAX_BYTES} bytes: no framework detected`);
    return undefined;
  }
  const h = await open(file, 'r');
  let text: string;
  try {
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await h.read(buf, 0, buf.length, 0);
    text = buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await h.close();
  }
  try {
    return detectFramework(JSON.parse(text), files, keptModules);
  } catch {
    note('package.json is not valid JSON: no framework detected');
    return undefined;
  }
}

/** An output directory left at its default (the tree itself) is unset; `./` says the tree on purpose. */
const UNSET_OUTPUT = new Set(['', '.']);

/**
 * The build command and output directory a build runs with: the settings' own, and where they leave one unset (an
 * empty command, the output `.`), the detected framework's, said in the build log ("Detected Vite: npm ci && npm run
 * build → dist"). `framework` is the detected one's id when it supplied either. `cache` is what the build cache
 * restored: a `node_modules` installed from this checkout's very `package.json` and npm lockfile is kept (the detected
 * `npm ci`, which would delete it, becomes NPM_KEEP_INSTALL), said in the log.
 */
export async function buildDefaults(
  settings: { buildCommand: string; outputDir: string },
  src: string,
  note: (text: string) => void,
  cache?: RestoredCache,
): Promise<{ buildCommand: string; outputDir: string; framework?: string }> {
  const unsetCommand = !settings.buildCommand.trim();
  const unsetOutput = UNSET_OUTPUT.has(settings.outputDir);
  if (!unsetCommand && !unsetOutput) return settings;
  const kept = unsetCommand && cache?.installedFrom !== undefined && cache.installedFrom === (await installDigest(src));
  const f = await frameworkOfCheckout(src, note, kept);
  if (!f) return settings;
  if (unsetCommand && f.buildCommand.startsWith(NPM_KEEP_INSTALL))
    note('build cache: node_modules kept (package.json and the lockfile are those it was installed from), npm install instead of npm ci');
  else if (unsetCommand && cache && f.buildCommand.startsWith('npm ci'))
    note(
      `build cache: node_modules not kept (${cache.installedFrom ? 'package.json or the lockfile changed since it was saved' : 'no node_modules whose install is known was restored'}), npm ci`,
    );
  const buildCommand = unsetCommand ? f.buildCommand : settings.buildCommand;
  const outputDir = unsetOutput ? f.outputDir : settings.outputDir;
  note(`Detected ${f.name}: ${buildCommand || 'no build command'} → ${outputDir} (set buildCommand or outputDir in the deploy settings to override)`);
  return { buildCommand, outputDir, framework: f.id };
}
