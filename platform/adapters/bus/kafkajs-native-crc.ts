import { createRequire } from 'node:module';
import { replaceKafkajsModule } from './kafkajs-module-swap.ts';

/**
 * kafkajs checksums every record batch with a pure-JS, byte-at-a-time CRC32C: about 93 µs per 22 KB
 * on our machines, a fifth of the edge's cost per request on the Kafka path. This swaps in the
 * SIMD implementation of `@node-rs/crc32` (6 µs) in kafkajs's internal crc32C module
 * (kafkajs-module-swap.ts), so every `require('../crc32C')` inside kafkajs gets ours.
 *
 * Installed by kafkajs-runtime.ts before kafkajs is first loaded. kafkajs is pinned to 2.2.4, whose file
 * layout this relies on; when the native module is missing or the layout differs, kafkajs keeps its own
 * implementation.
 * crc32c.test.ts checks both give the same checksums.
 */
const require = createRequire(import.meta.url);
const CRC_MODULE = 'kafkajs/src/protocol/recordBatch/crc32C/index.js';

/** True when kafkajs will use the native CRC32C. Call only from kafkajs-runtime.ts. */
export function installNativeCrc(): boolean {
  return replaceKafkajsModule<(buffer: Buffer) => number>(CRC_MODULE, () => {
    // Throws where @node-rs/crc32 has no native build: kafkajs's own CRC32C stays in place.
    const { crc32c } = require('@node-rs/crc32') as { crc32c: (input: Buffer, initial?: number) => number };
    // kafkajs's export returns the checksum as an unsigned 32-bit number.
    return (buffer: Buffer) => crc32c(buffer) >>> 0;
  });
}
