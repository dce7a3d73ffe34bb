import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The checkout's root: the nearest folder up from this module holding this project's package.json. Files the
 * service reads beside its code (migrations, the console's and the browser SDK's sources, the sandbox's init
 * script) are found from here, so they are found alike when the TypeScript source runs (tsx, vitest) and when the
 * compiled service runs from dist/service/ (`npm start`, service/build.mjs), where a module's own URL names a chunk.
 */
const PACKAGE_NAME = 'service-errors-webhooks';

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === PACKAGE_NAME) return dir;
      } catch {
        // not ours (unreadable): keep looking up
      }
    }
    if (path.dirname(dir) === dir) throw new Error(`the service's package.json (${PACKAGE_NAME}) was not found above ${from}`);
  }
}

export const SOURCE_ROOT = findRoot(import.meta.dirname);

/** A path inside the checkout, from its root. */
export const fromSourceRoot = (...parts: string[]) => path.join(SOURCE_ROOT, ...parts);
