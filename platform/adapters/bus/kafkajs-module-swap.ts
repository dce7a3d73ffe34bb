import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/**
 * Replaces the exports of one of kafkajs's internal modules in Node's module cache, so every later
 * `require` of it inside kafkajs gets `make(original)`. It takes effect only for kafkajs code loaded after
 * it, so the modules that use it are imported before `kafkajs` (kafka-bus.ts imports them first).
 *
 * kafkajs is pinned to 2.2.4, whose file layout this relies on. Returns false, and changes nothing, when the
 * module is not there, when `make` declines (returns undefined), or when `make` throws (a native module
 * without a build for this platform): kafkajs then keeps its own code.
 */
export function replaceKafkajsModule<T>(specifier: string, make: (original: T) => T | undefined): boolean {
  try {
    const path = require.resolve(specifier);
    const original = require(path) as T;
    const cached = require.cache[path];
    if (!cached) return false;
    const replacement = make(original);
    if (replacement === undefined) return false;
    cached.exports = replacement;
    return true;
  } catch {
    return false;
  }
}
