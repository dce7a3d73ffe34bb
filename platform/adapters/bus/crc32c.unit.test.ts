import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadKafkajs } from './kafkajs-runtime.ts';

const require = createRequire(import.meta.url);

describe('kafkajs record-batch checksum', () => {
  it('uses the native CRC32C, and it agrees with kafkajs own implementation', () => {
    expect(loadKafkajs().replacements.nativeCrc).toBe(true);
    const patched = require('kafkajs/src/protocol/recordBatch/crc32C/index.js') as (b: Buffer) => number;
    const original = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;
    for (const size of [0, 1, 7, 64, 4096, 22 * 1024, 100_003]) {
      const buf = randomBytes(size);
      expect(patched(buf)).toBe(original(buf) >>> 0);
    }
    // The standard CRC32C check value.
    expect(patched(Buffer.from('123456789'))).toBe(0xe3069283);
  });
});
