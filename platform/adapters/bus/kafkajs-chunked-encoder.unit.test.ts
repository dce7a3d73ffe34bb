import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { OriginalEncoder } from './kafkajs-chunked-encoder.ts';
import { loadKafkajs } from './kafkajs-runtime.ts';

const { replacements } = loadKafkajs();

const require = createRequire(import.meta.url);
const ENCODER = require.resolve('kafkajs/src/protocol/encoder.js');

type AnyEncoder = any;
type EncoderClass = new () => AnyEncoder;

/** A small deterministic PRNG, so a failure names a seed that reproduces it. */
function rng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return { next, int: (n: number) => Math.floor(next() * n), pick: <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]! };
}

/** Sizes around the thresholds of the chunked class (256 by reference, 4 KB scratch) and kafkajs's 512. */
const SIZES = [0, 1, 5, 63, 64, 65, 255, 256, 257, 511, 512, 513, 4095, 4096, 4097, 9000, 70_000];
/** Strings with an int16 length stay under 32 KB. */
const STRING_SIZES = SIZES.filter((n) => n < 32_000);

function bytes(r: ReturnType<typeof rng>, size: number): Buffer {
  const b = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) b[i] = r.int(256);
  return b;
}

/**
 * A random program of writes, run the same way on two classes: every writer kafkajs has, values and
 * nesting drawn from the same seed, with the size compared after every step.
 */
function program(seed: number, Cls: EncoderClass, depth = 0): { encoder: AnyEncoder; sizes: number[] } {
  const r = rng(seed);
  const e = new Cls();
  const sizes: number[] = [];
  const steps = 1 + r.int(depth ? 6 : 30);
  const nested = () => program(r.int(2 ** 31), Cls, depth + 1).encoder;
  const str = () => (r.next() < 0.1 ? null : 'é'.repeat(r.int(3)) + 'x'.repeat(r.pick(STRING_SIZES)));
  for (let i = 0; i < steps; i++) {
    const op = r.int(depth >= 2 ? 19 : 24);
    switch (op) {
      case 0:
        e.writeInt8(r.int(256) - 128);
        break;
      case 1:
        e.writeInt16(r.int(65536) - 32768);
        break;
      case 2:
        e.writeInt32(r.int(2 ** 32) - 2 ** 31);
        break;
      case 3:
        e.writeUInt32(r.int(2 ** 32));
        break;
      case 4:
        e.writeInt64(String(BigInt(r.int(2 ** 31)) * BigInt(r.int(2 ** 31)) - 2n ** 40n));
        break;
      case 5:
        e.writeDouble(r.next() * 1e6);
        break;
      case 6:
        e.writeBoolean(r.next() < 0.5);
        break;
      case 7:
        e.writeString(str());
        break;
      case 8:
        e.writeVarIntString(str());
        break;
      case 9:
        e.writeUVarIntString(str());
        break;
      case 10:
        e.writeBytes(r.next() < 0.1 ? null : r.next() < 0.7 ? bytes(r, r.pick(SIZES)) : String(str()));
        break;
      case 11:
        e.writeVarIntBytes(r.next() < 0.1 ? null : r.next() < 0.7 ? bytes(r, r.pick(SIZES)) : String(str()));
        break;
      case 12:
        e.writeUVarIntBytes(r.next() < 0.1 ? null : r.next() < 0.7 ? bytes(r, r.pick(SIZES)) : String(str()));
        break;
      case 13:
        e.writeBuffer(bytes(r, r.pick(SIZES)));
        break;
      case 14:
        e.writeVarInt(r.int(2 ** 32) - 2 ** 31);
        break;
      case 15:
        e.writeUVarInt(r.int(2 ** 32));
        break;
      case 16:
        e.writeVarLong(String(BigInt(r.int(2 ** 31)) * BigInt(r.int(2 ** 20)) - 2n ** 45n));
        break;
      case 17:
        e.writeArray([r.int(1000), 'abc', r.int(7)]);
        break;
      case 18:
        e.writeArray(['x'.repeat(r.pick(STRING_SIZES)), 'y'], 'string');
        break;
      case 19:
        e.writeEncoder(nested());
        break;
      case 20:
        e.writeEncoderArray([nested(), nested()]);
        break;
      case 21:
        e.writeArray([nested(), nested(), nested()], 'object');
        break;
      case 22:
        e.writeVarIntArray([nested(), nested()], 'object');
        break;
      case 23:
        e.writeUVarIntArray([nested()], 'object');
        break;
    }
    sizes.push(e.size());
  }
  return { encoder: e, sizes };
}

/**
 * kafkajs's produce request (v3, the version it uses with Kafka ≥ 0.11) and its framing, loaded afresh
 * with `Cls` as their Encoder, so the same request can be encoded with either class.
 */
function produceModulesWith(Cls: EncoderClass) {
  const paths = [
    'kafkajs/src/protocol/requests/produce/v3/request.js',
    'kafkajs/src/protocol/recordBatch/v0/index.js',
    'kafkajs/src/protocol/recordBatch/record/v0/index.js',
    'kafkajs/src/protocol/recordBatch/header/v0/index.js',
    'kafkajs/src/protocol/request.js',
  ].map((p) => require.resolve(p));
  const saved = paths.map((p) => require.cache[p]);
  const encoderEntry = require.cache[ENCODER]!;
  const installed = encoderEntry.exports;
  try {
    encoderEntry.exports = Cls;
    for (const p of paths) delete require.cache[p];
    return { produce: require(paths[0]!), createRequest: require(paths[4]!) };
  } finally {
    encoderEntry.exports = installed;
    paths.forEach((p, i) => (saved[i] ? (require.cache[p] = saved[i]) : delete require.cache[p]));
  }
}

describe('kafkajs encoder without copies (kafkajs-chunked-encoder.ts)', () => {
  const Chunked = require(ENCODER) as EncoderClass;
  const Original = OriginalEncoder as unknown as EncoderClass;

  it('is installed in place of kafkajs own class', () => {
    expect(replacements.chunkedEncoder).toBe(true);
    expect(Chunked).not.toBe(Original);
  });

  it('writes the same bytes as kafkajs own class, for every writer and any nesting', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const a = program(seed, Original);
      const b = program(seed, Chunked);
      expect({ seed, sizes: b.sizes }).toEqual({ seed, sizes: a.sizes });
      expect(b.encoder.buffer.equals(a.encoder.buffer), `seed ${seed}`).toBe(true);
    }
  });

  it('accepts encoders of kafkajs own class and is accepted by it (a module that loaded kafkajs first)', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const mine = program(seed, Chunked).encoder;
      const theirs = program(seed, Original).encoder;
      const aInB = new Chunked().writeInt8(1).writeEncoder(theirs).writeEncoderArray([theirs]).buffer;
      const bInA = new Original().writeInt8(1).writeEncoder(mine).writeEncoderArray([mine]).buffer;
      expect(aInB.equals(bInA)).toBe(true);
    }
  });

  it('asking for .buffer twice copies once and changes nothing; writing on after it keeps earlier bytes', () => {
    const e = new Chunked().writeInt32(7).writeBuffer(Buffer.alloc(1000, 1)).writeInt16(3);
    const first = e.buffer;
    expect(e.buffer).toBe(first);
    e.writeBuffer(Buffer.alloc(300, 2)).writeInt8(9);
    const o = new Original().writeInt32(7).writeBuffer(Buffer.alloc(1000, 1)).writeInt16(3).writeBuffer(Buffer.alloc(300, 2)).writeInt8(9);
    expect(e.buffer.equals(o.buffer)).toBe(true);
    expect(first.equals(o.buffer.subarray(0, first.length))).toBe(true);
  });

  it('encodes produce requests exactly as kafkajs does (records, keys, headers, partitions, topics, framing)', async () => {
    const withOriginal = produceModulesWith(Original);
    const withChunked = produceModulesWith(Chunked);
    const r = rng(42);
    for (let round = 0; round < 40; round++) {
      const topicData = Array.from({ length: 1 + r.int(3) }, (_, t) => ({
        topic: `errors.events.${t}`,
        partitions: Array.from({ length: 1 + r.int(4) }, (_, p) => ({
          partition: p,
          firstSequence: r.int(1000),
          messages: Array.from({ length: 1 + r.int(12) }, () => ({
            key: r.pick([null, `prj_${r.int(1e6)}`, bytes(r, 300)]),
            value: r.pick([null, bytes(r, r.pick(SIZES)), 'a string value']),
            headers: r.next() < 0.3 ? { 'content-type': 'application/json', trace: [bytes(r, 10), 'x'.repeat(r.pick([1, 400]))] } : {},
            timestamp: 1_764_000_000_000 + r.int(1000),
          })),
        })),
      }));
      const args = { acks: -1, timeout: 5000, transactionalId: r.pick([null, 'tx-1']), producerId: 4242, producerEpoch: 3, topicData };
      const encode = async (m: typeof withOriginal) =>
        (await m.createRequest({ correlationId: round, clientId: 'edge', request: m.produce(args) })).buffer as Buffer;
      const [a, b] = await Promise.all([encode(withOriginal), encode(withChunked)]);
      expect(b.length).toBe(a.length);
      expect(b.equals(a), `round ${round}`).toBe(true);
    }
  });
});
