import { createRequire } from 'node:module';

/**
 * kafkajs checksums every record batch with a pure-JS, byte-at-a-time CRC32C: about 93 µs per 22 KB
 * on our machines, a fifth of the edge's cost per request on the Kafka path. This swaps in the
 * SIMD implementation of `@node-rs/crc32` (6 µs) by priming Node's module cache for kafkajs's
 * internal crc32C module before kafkajs loads, so every `require('../crc32C')` inside it gets ours.
 *
 * Import this module before `kafkajs`. kafkajs is pinned to 2.2.4, whose file layout this relies on;
 * when the native module is missing or the layout differs, kafkajs keeps its own implementation.
 * crc32c.test.ts checks both give the same checksums.
 */
const require = createRequire(import.meta.url);
const CRC_MODULE = 'kafkajs/src/protocol/recordBatch/crc32C/index.js';

export let nativeCrcInstalled = false;

try {
  const { crc32c } = require('@node-rs/crc32') as { crc32c: (input: Buffer, initial?: number) => number };
  const path = require.resolve(CRC_MODULE);
  require(path);
  const cached = require.cache[path];
  if (cached) {
    // kafkajs's export returns the checksum as an unsigned 32-bit number.
    cached.exports = (buffer: Buffer) => crc32c(buffer) >>> 0;
    nativeCrcInstalled = true;
  }
} catch {
  // No native build for this platform: kafkajs's own CRC32C stays in place.
}
