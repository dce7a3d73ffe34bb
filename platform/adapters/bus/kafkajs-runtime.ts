import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type * as Kafkajs from 'kafkajs';
import { installChunkedEncoder } from './kafkajs-chunked-encoder.ts';
import { installNativeCrc } from './kafkajs-native-crc.ts';
import { installRequestQueueFix } from './kafkajs-request-queue-fix.ts';

/**
 * The one way this project loads kafkajs. Our replacements of kafkajs internals (the chunked encoder, the
 * native CRC32C, the request-queue timer fix) work by swapping modules in Node's module cache, which only
 * reaches kafkajs code loaded afterwards; kafkajs loads its encoder when first required but its produce
 * request, record batch and CRC modules only on first use. So a program that loaded kafkajs first would run
 * a mix of patched and unpatched code. This installs every replacement, then loads kafkajs, once per process;
 * if kafkajs's modules are already in the cache it refuses to install any (kafkajs then runs wholly as
 * published) and says why, so the mix can never happen.
 *
 * Nothing else imports a value from 'kafkajs' (type imports are fine): kafkajs-runtime.test.ts fails if
 * anything does.
 */
export interface KafkajsRuntime {
  kafkajs: typeof Kafkajs;
  /** Which replacements are in place; all false when `refused` is set. */
  replacements: { chunkedEncoder: boolean; nativeCrc: boolean; requestQueueFix: boolean; noDelaySockets: boolean };
  /** Why the replacements were not installed. */
  refused?: string;
  /** kafkajs's own socket factory (TLS, keep-alive), when its internal module is where 2.2.4 keeps it. */
  socketFactory?: () => Kafkajs.ISocketFactory;
}

const require = createRequire(import.meta.url);
const SOCKET_FACTORY_MODULE = 'kafkajs/src/network/socketFactory.js';
/** One runtime per process, shared by every copy of this module (test runners may load it more than once). */
const RUNTIME = Symbol.for('service.kafkajs-runtime');

export function loadKafkajs(): KafkajsRuntime {
  const g = globalThis as { [RUNTIME]?: KafkajsRuntime };
  return (g[RUNTIME] ??= install());
}

function install(): KafkajsRuntime {
  const loadedEarly = kafkajsModulesLoaded();
  if (loadedEarly) {
    return {
      kafkajs: require('kafkajs') as typeof Kafkajs,
      replacements: { chunkedEncoder: false, nativeCrc: false, requestQueueFix: false, noDelaySockets: false },
      refused: `kafkajs was loaded before its replacements could be installed (${loadedEarly} was already in the module cache); it runs as published. Load kafkajs only through loadKafkajs().`,
    };
  }
  const chunkedEncoder = installChunkedEncoder();
  const nativeCrc = installNativeCrc();
  const requestQueueFix = installRequestQueueFix();
  const kafkajs = require('kafkajs') as typeof Kafkajs;
  let socketFactory: KafkajsRuntime['socketFactory'];
  try {
    const f = require(SOCKET_FACTORY_MODULE) as unknown;
    if (typeof f === 'function') socketFactory = f as () => Kafkajs.ISocketFactory;
  } catch {
    // A kafkajs without that file: its own default factory (Nagle on) is used instead.
  }
  return { kafkajs, replacements: { chunkedEncoder, nativeCrc, requestQueueFix, noDelaySockets: socketFactory !== undefined }, socketFactory };
}

/** The first kafkajs module found in Node's module cache, if any. */
function kafkajsModulesLoaded(): string | undefined {
  let root: string;
  try {
    root = dirname(require.resolve('kafkajs/package.json'));
  } catch {
    return undefined;
  }
  return Object.keys(require.cache).find((path) => path.startsWith(root + '/') || path.startsWith(root + '\\'));
}
