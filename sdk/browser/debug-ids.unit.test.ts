import { defaultStackParser } from '@sentry/browser';
import { getFilenameToDebugIdMap } from '@sentry/core';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseStack } from '../../processor/errors/stack-parser.ts';

/**
 * cx.js's debug ids (src/debug-ids.ts): the bundles' `_sentryDebugIds` keys are read as @sentry/core reads them, and an
 * event names only the files of its own stack. The module keeps its table between calls, so each test loads it anew.
 */
type Globals = { _sentryDebugIds?: Record<string, unknown>; _debugIds?: Record<string, unknown> };
const g = globalThis as unknown as Globals;
const fresh = async () => {
  vi.resetModules();
  return import('./src/debug-ids.ts');
};
afterEach(() => {
  delete g._sentryDebugIds;
  delete g._debugIds;
});

const HOST = 'https://shop.example.com';
const ID = { index: '6e926cb8-25bf-559f-a715-f5005a82bf96', vendor: '4a8cb436-4752-53b3-80d8-4cf1c268a742', lazy: 'c2ba6f5c-7f59-4b5e-9d3a-3f2b1c0d9e8f' };
/** `new Error().stack` as each browser prints it inside the snippet a bundle was injected with. */
const SNIPPET_STACKS = {
  chrome: `Error\n    at ${HOST}/assets/index-3f9a2c1b.js:1:92\n    at ${HOST}/assets/index-3f9a2c1b.js:1:290`,
  firefox: `@${HOST}/assets/vendor-8e1d7f0a.js:1:92\n@${HOST}/assets/vendor-8e1d7f0a.js:1:265\n`,
  safari: `global code@${HOST}/assets/lazy-5d1e0b2a.js:1:95`,
};
const registered = () => ({
  [SNIPPET_STACKS.chrome]: ID.index,
  [SNIPPET_STACKS.firefox]: ID.vendor,
  [SNIPPET_STACKS.safari]: ID.lazy,
});
const EVENT_STACK = [
  "TypeError: Cannot read properties of undefined (reading 'items')",
  `    at checkout (${HOST}/assets/index-3f9a2c1b.js:1:1250)`,
  `    at HTMLButtonElement.<anonymous> (${HOST}/assets/index-3f9a2c1b.js:1:1800)`,
  `    at async Promise.all (index 0)`,
  `    at ${HOST}/assets/vendor-8e1d7f0a.js:2:100`,
].join('\n');

describe("cx.js's debug ids (issue 37)", () => {
  it("reads each snippet's stack as @sentry/core does: the file of its top frame", async () => {
    g._sentryDebugIds = registered();
    const { stackFiles, debugIdsOf } = await fresh();
    const sentry = getFilenameToDebugIdMap(defaultStackParser);
    expect(sentry).toEqual({
      [`${HOST}/assets/index-3f9a2c1b.js`]: ID.index,
      [`${HOST}/assets/vendor-8e1d7f0a.js`]: ID.vendor,
      [`${HOST}/assets/lazy-5d1e0b2a.js`]: ID.lazy,
    });
    const all = `${EVENT_STACK}\n    at ${HOST}/assets/lazy-5d1e0b2a.js:1:5`;
    expect(debugIdsOf(all)).toEqual(sentry);
    // And the files are the ones the service's stack parser reads from the same stack.
    expect(stackFiles(EVENT_STACK)).toEqual(parseStack(EVENT_STACK).map((f) => f.file));
    for (const stack of Object.values(SNIPPET_STACKS)) expect(stackFiles(stack)[0]).toBe(parseStack(stack)[0]!.file);
  });

  it("sends only the files the event's stack names, each once, and nothing without a snippet", async () => {
    let m = await fresh();
    expect(m.debugIdsOf(EVENT_STACK)).toBeUndefined();
    g._sentryDebugIds = registered();
    m = await fresh();
    expect(m.debugIdsOf(EVENT_STACK)).toEqual({ [`${HOST}/assets/index-3f9a2c1b.js`]: ID.index, [`${HOST}/assets/vendor-8e1d7f0a.js`]: ID.vendor });
    expect(m.debugIdsOf('Error: no frames')).toBeUndefined();
    expect(m.debugIdsOf(`Error\n    at ${HOST}/assets/other.js:1:1`)).toBeUndefined();
  });

  it('native _debugIds win for the same file; a value that is no string is skipped', async () => {
    g._sentryDebugIds = { ...registered(), [`Error\n    at ${HOST}/assets/broken.js:1:1`]: 42 };
    g._debugIds = { [`Error\n    at ${HOST}/assets/vendor-8e1d7f0a.js:1:7`]: ID.lazy };
    const { debugIdsOf } = await fresh();
    expect(debugIdsOf(`${EVENT_STACK}\n    at ${HOST}/assets/broken.js:1:1`)).toEqual({
      [`${HOST}/assets/index-3f9a2c1b.js`]: ID.index,
      [`${HOST}/assets/vendor-8e1d7f0a.js`]: ID.lazy,
    });
  });

  it('keeps its table until the number of keys changes (a bundle loaded)', async () => {
    g._sentryDebugIds = registered();
    const { debugIdsOf } = await fresh();
    const index = `Error\n    at ${HOST}/assets/index-3f9a2c1b.js:1:1`;
    expect(debugIdsOf(index)).toEqual({ [`${HOST}/assets/index-3f9a2c1b.js`]: ID.index });
    // The same keys with another value: the kept table answers (the parse is not redone per event).
    g._sentryDebugIds[SNIPPET_STACKS.chrome] = ID.lazy;
    expect(debugIdsOf(index)).toEqual({ [`${HOST}/assets/index-3f9a2c1b.js`]: ID.index });
    // A lazy chunk registers itself: one more key, the table is rebuilt.
    g._sentryDebugIds[`Error\n    at ${HOST}/assets/late.js:1:9`] = ID.vendor;
    expect(debugIdsOf(`${index}\n    at ${HOST}/assets/late.js:3:4`)).toEqual({
      [`${HOST}/assets/index-3f9a2c1b.js`]: ID.lazy,
      [`${HOST}/assets/late.js`]: ID.vendor,
    });
  });

  it('at most 100 files an event (the edge keeps no more)', async () => {
    g._sentryDebugIds = {};
    const lines = ['Error: deep'];
    for (let i = 0; i < 150; i++) {
      g._sentryDebugIds[`Error\n    at ${HOST}/c/${i}.js:1:1`] = ID.index;
      lines.push(`    at f (${HOST}/c/${i}.js:1:1)`);
    }
    const { debugIdsOf } = await fresh();
    const ids = debugIdsOf(lines.join('\n'))!;
    expect(Object.keys(ids)).toHaveLength(100);
    expect(ids).toHaveProperty(`${HOST}/c/99.js`);
    expect(ids).not.toHaveProperty(`${HOST}/c/100.js`);
  });
});

describe('the errors client', () => {
  it("sends an error's debug ids with it; a broken _sentryDebugIds costs the ids, never the event", async () => {
    g._sentryDebugIds = registered();
    vi.resetModules();
    const bodies: Array<{ batch: Array<Record<string, unknown>> }> = [];
    vi.stubGlobal('fetch', async (_url: string, init: { body: string }) => {
      bodies.push(JSON.parse(init.body));
      return new Response('{}', { status: 202, headers: { 'content-type': 'application/json' } });
    });
    try {
      const { initErrors } = await import('./src/errors.ts');
      const errors = initErrors({ baseUrl: 'http://127.0.0.1:1/v1/', ingestKey: 'cak_live_x', captureGlobal: false });
      const err = new TypeError("Cannot read properties of undefined (reading 'items')");
      err.stack = EVENT_STACK;
      errors.captureException(err);
      g._sentryDebugIds = new Proxy(
        {},
        {
          ownKeys() {
            throw new Error('hostile');
          },
        },
      );
      const other = new RangeError('still sent');
      other.stack = `RangeError: still sent\n    at ${HOST}/assets/index-3f9a2c1b.js:1:5`;
      errors.captureException(other);
      await errors.flush();
      const [first, second] = bodies.flatMap((b) => b.batch);
      expect(first!.debugIds).toEqual({ [`${HOST}/assets/index-3f9a2c1b.js`]: ID.index, [`${HOST}/assets/vendor-8e1d7f0a.js`]: ID.vendor });
      expect(second).toMatchObject({ name: 'RangeError', message: 'still sent' });
      expect(second).not.toHaveProperty('debugIds');
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
