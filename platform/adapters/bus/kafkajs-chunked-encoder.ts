import { replaceKafkajsModule } from './kafkajs-module-swap.ts';

/**
 * kafkajs 2.2.4 encodes every request through nested `Encoder`s (record → record batch → partition →
 * topic → produce request → request header → size prefix), and each level copies the level below into a
 * buffer of its own that grows by doubling from 512 zero-filled bytes. A produce request of ten 4.5 KB
 * messages is copied about nine times and allocates about 1 MB of fresh `ArrayBuffer`s on the way: in a
 * profile of the edge at 7,000 req/s, `Buffer.alloc` inside the encoder's growth was the single largest
 * cost on the Kafka path (a fifth of it), before the socket write.
 *
 * This replaces the class with one that produces the same bytes without those copies: small writes
 * (integers, varints, short strings) go into a scratch buffer taken from Node's pool, and a buffer or
 * encoder of REFERENCE_MIN_BYTES or more is appended by reference. Bytes are joined (one copy, exact size)
 * only when a level asks for `.buffer`: for a produce request that is the record batch body (its CRC), the
 * record batch (kafkajs passes it on as bytes), and the request the socket writes.
 *
 * It replaces kafkajs's encoder module in Node's module cache (kafkajs-module-swap.ts), as the CRC swap does,
 * installed by kafkajs-runtime.ts before kafkajs is first loaded. An encoder of either class may be written
 * into one of the other. kafkajs is pinned to 2.2.4; if the module
 * is not where this expects, kafkajs keeps its own class. kafkajs-chunked-encoder.test.ts checks, byte for byte, that
 * requests encode the same with both classes.
 */
const ENCODER_MODULE = 'kafkajs/src/protocol/encoder.js';

/** Buffers and encoders at least this large are appended by reference instead of copied. */
const REFERENCE_MIN_BYTES = 256;
/** First scratch buffer of an encoder; later ones double up to SCRATCH_MAX_BYTES (all from Node's pool). */
const SCRATCH_MIN_BYTES = 64;
const SCRATCH_MAX_BYTES = 4096;
const EMPTY = Buffer.alloc(0);

/** The part of kafkajs's Encoder this relies on: its prototype's writers use `buf`, `offset` and `ensureAvailable`. */
interface KafkaEncoder {
  buf: Buffer;
  offset: number;
  readonly buffer: Buffer;
  size(): number;
  ensureAvailable(length: number): void;
  writeInt32(value: number): KafkaEncoder;
  writeBufferInternal(buffer: Buffer): void;
}
type EncoderClass = (new (initialSize?: number) => KafkaEncoder) & Record<string, unknown>;

/** kafkajs's own class, for the test that compares both. */
export let OriginalEncoder: EncoderClass | undefined;

export function chunkedEncoderClass(Original: EncoderClass): EncoderClass {
  const originalWriteBytes = (Original.prototype as unknown as { writeBytes(v: unknown): KafkaEncoder }).writeBytes;

  /**
   * Bytes written so far = `parts` (sealed, never written again) + buf[start, offset) (the scratch
   * buffer's unsealed tail). kafkajs's inherited writers call ensureAvailable(n) and then write n bytes
   * at buf[offset]: ensureAvailable seals the tail and takes a new scratch buffer when n does not fit,
   * so nothing already written is ever moved or overwritten.
   */
  class ChunkedEncoder {
    buf: Buffer = EMPTY;
    offset = 0;
    start = 0;
    parts: Buffer[] | null = null;
    sealedBytes = 0;

    // kafkajs passes an initial size; the scratch buffer is taken on the first write instead.
    constructor(_initialSize?: number) {}

    seal(): void {
      if (this.offset > this.start) {
        (this.parts ??= []).push(this.buf.subarray(this.start, this.offset));
        this.sealedBytes += this.offset - this.start;
        this.start = this.offset;
      }
    }

    ensureAvailable(length: number): void {
      if (this.offset + length <= this.buf.length) return;
      this.seal();
      const next = Math.min(SCRATCH_MAX_BYTES, Math.max(SCRATCH_MIN_BYTES, this.buf.length * 2));
      this.buf = Buffer.allocUnsafe(Math.max(length, next));
      this.offset = 0;
      this.start = 0;
    }

    /** Appends `buffer` by reference (large) or copies it into the scratch buffer (small). */
    writeBufferInternal(buffer: Buffer): void {
      const length = buffer.length;
      if (length >= REFERENCE_MIN_BYTES) {
        this.seal();
        (this.parts ??= []).push(buffer);
        this.sealedBytes += length;
        return;
      }
      this.ensureAvailable(length);
      buffer.copy(this.buf, this.offset, 0, length);
      this.offset += length;
    }

    size(): number {
      return this.sealedBytes + this.offset - this.start;
    }

    /** Everything written, as one buffer; joined once and remembered, so asking again copies nothing. */
    get buffer(): Buffer {
      this.seal();
      const parts = this.parts;
      if (!parts) return EMPTY;
      if (parts.length === 1) return parts[0]!;
      const all = Buffer.concat(parts, this.sealedBytes);
      this.parts = [all];
      return all;
    }

    writeEncoder(value: unknown): this {
      if (value instanceof ChunkedEncoder) {
        value.seal();
        if (value.sealedBytes < REFERENCE_MIN_BYTES) {
          // Small: copied into the scratch buffer (parts of a few bytes would cost more to join than to copy).
          for (const part of value.parts ?? []) this.writeBufferInternal(part);
          return this;
        }
        this.seal();
        const parts = (this.parts ??= []);
        for (const part of value.parts!) parts.push(part);
        this.sealedBytes += value.sealedBytes;
        return this;
      }
      if (value == null || !Buffer.isBuffer((value as KafkaEncoder).buf)) throw new Error('value should be an instance of Encoder');
      // kafkajs's own class (a module that loaded it before this swap).
      this.writeBufferInternal((value as KafkaEncoder).buffer);
      return this;
    }

    writeEncoderArray(values: unknown): this {
      if (!Array.isArray(values) || values.some((v) => v == null || !Buffer.isBuffer((v as KafkaEncoder).buf))) {
        throw new Error('all values should be an instance of Encoder[]');
      }
      for (const v of values) this.writeEncoder(v);
      return this;
    }

    writeBytes(value: unknown): this {
      if (!Buffer.isBuffer(value)) return originalWriteBytes.call(this, value) as unknown as this;
      // kafkajs reserves room for the whole value first; here it goes by reference.
      (this as unknown as KafkaEncoder).writeInt32(value.length);
      this.writeBufferInternal(value);
      return this;
    }

    /** Unsigned LEB128, written in place (kafkajs builds a Buffer from an array for each varint). */
    writeUVarInt(value: number): this {
      this.ensureAvailable(5);
      const buf = this.buf;
      let o = this.offset;
      while ((value & 0xffffff80) !== 0) {
        buf[o++] = (value & 0x7f) | 0x80;
        value >>>= 7;
      }
      buf[o++] = value & 0x7f;
      this.offset = o;
      return this;
    }
  }

  // Every other writer (integers, strings, arrays, varlongs) is kafkajs's own, working on buf/offset.
  Object.setPrototypeOf(ChunkedEncoder.prototype, Original.prototype);
  // Static helpers kafkajs calls on the class (sizeOfVarInt, encodeZigZag, nextPowerOfTwo, ...).
  for (const name of Object.getOwnPropertyNames(Original)) {
    if (name === 'prototype' || name === 'length' || name === 'name') continue;
    Object.defineProperty(ChunkedEncoder, name, Object.getOwnPropertyDescriptor(Original, name)!);
  }
  return ChunkedEncoder as unknown as EncoderClass;
}

/** True when kafkajs will encode with the chunked class. Call only from kafkajs-runtime.ts. */
export function installChunkedEncoder(): boolean {
  return replaceKafkajsModule<EncoderClass>(ENCODER_MODULE, (Original) => {
    if (typeof Original !== 'function' || typeof Original.prototype.writeBufferInternal !== 'function' || typeof Original.sizeOfVarInt !== 'function')
      return undefined;
    OriginalEncoder = Original;
    return chunkedEncoderClass(Original);
  });
}
