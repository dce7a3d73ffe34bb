import { getFilenameToDebugIdMap } from '@sentry/core';
import { defaultStackParser } from '@sentry/node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseStack } from '../../processor/errors/stack-parser.ts';

/**
 * @cx/node's debug ids (debug-ids.ts): the bundles' `_sentryDebugIds` keys are read as @sentry/core reads them, and an
 * event names only the files of its own stack. The module keeps its table between calls, so each test loads it anew.
 */
type Globals = { _sentryDebugIds?: Record<string, unknown>; _debugIds?: Record<string, unknown> };
const g = globalThis as unknown as Globals;
const fresh = async () => {
  vi.resetModules();
  return import('./debug-ids.ts');
};
afterEach(() => {
  delete g._sentryDebugIds;
  delete g._debugIds;
});

const ID = { server: '6e926cb8-25bf-559f-a715-f5005a82bf96', chunk: '4a8cb436-4752-53b3-80d8-4cf1c268a742', esm: 'c2ba6f5c-7f59-4b5e-9d3a-3f2b1c0d9e8f' };
/** `new Error().stack` inside the snippet of a CommonJS bundle, a lazily required chunk and an ES module. */
const SNIPPET_STACKS = {
  server: [
    'Error',
    '    at Object.<anonymous> (/app/dist/server.js:1:92)',
    '    at Module._compile (node:internal/modules/cjs/loader:1554:14)',
    '    at Object..js (node:internal/modules/cjs/loader:1706:10)',
  ].join('\n'),
  chunk: 'Error\n    at /app/dist/chunks/orders-3f9a2c1b.js:1:92\n    at Object.<anonymous> (/app/dist/chunks/orders-3f9a2c1b.js:1:290)',
  esm: 'Error\n    at file:///app/dist/worker.mjs:1:92\n    at ModuleJob.run (node:internal/modules/esm/module_job:271:25)',
};
const EVENT_STACK = [
  'TypeError: card declined',
  '    at chargeCard (/app/dist/chunks/orders-3f9a2c1b.js:1:1250)',
  '    at async Server.handle (/app/dist/server.js:1:4000)',
  '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
].join('\n');

describe("@cx/node's debug ids (issue 37)", () => {
  it("reads each snippet's stack as @sentry/core does: the file of its top frame", async () => {
    g._sentryDebugIds = { [SNIPPET_STACKS.server]: ID.server, [SNIPPET_STACKS.chunk]: ID.chunk };
    const { debugIdsOf, stackFiles } = await fresh();
    const sentry = getFilenameToDebugIdMap(defaultStackParser);
    expect(sentry).toEqual({ '/app/dist/server.js': ID.server, '/app/dist/chunks/orders-3f9a2c1b.js': ID.chunk });
    expect(debugIdsOf(EVENT_STACK)).toEqual(sentry);
    expect(stackFiles(EVENT_STACK)).toEqual(parseStack(EVENT_STACK).map((f) => f.file));
    // An ES module's file stays the URL the stack prints (Sentry's parser drops `file://`, from its frames and keys
    // alike); the service's parser reads the same.
    for (const stack of Object.values(SNIPPET_STACKS)) expect(stackFiles(stack)[0]).toBe(parseStack(stack)[0]!.file);
    expect(stackFiles(SNIPPET_STACKS.esm)[0]).toBe('file:///app/dist/worker.mjs');
  });

  it('sends only the files the stack names; native _debugIds win; non-string ids are skipped; at most 100', async () => {
    let m = await fresh();
    expect(m.debugIdsOf(EVENT_STACK)).toBeUndefined();
    g._sentryDebugIds = {
      ...Object.fromEntries(Object.entries(SNIPPET_STACKS).map(([k, s]) => [s, ID[k as keyof typeof ID]])),
      'Error\n    at /app/x.js:1:1': 7,
    };
    g._debugIds = { 'Error\n    at /app/dist/server.js:1:1': ID.esm };
    m = await fresh();
    expect(m.debugIdsOf(`${EVENT_STACK}\n    at /app/x.js:2:2`)).toEqual({ '/app/dist/chunks/orders-3f9a2c1b.js': ID.chunk, '/app/dist/server.js': ID.esm });
    expect(m.debugIdsOf('Error: no frames')).toBeUndefined();

    const lines = ['Error: deep'];
    for (let i = 0; i < 150; i++) {
      g._sentryDebugIds[`Error\n    at /app/c/${i}.js:1:1`] = ID.chunk;
      lines.push(`    at f (/app/c/${i}.js:1:1)`);
    }
    const ids = m.debugIdsOf(lines.join('\n'))!;
    expect(Object.keys(ids)).toHaveLength(100);
    expect(ids).not.toHaveProperty('/app/c/100.js');
  });

  it('keeps its table until the number of keys changes (a chunk loaded)', async () => {
    g._sentryDebugIds = { [SNIPPET_STACKS.server]: ID.server };
    const { debugIdsOf } = await fresh();
    expect(debugIdsOf(EVENT_STACK)).toEqual({ '/app/dist/server.js': ID.server });
    g._sentryDebugIds[SNIPPET_STACKS.server] = ID.esm;
    expect(debugIdsOf(EVENT_STACK)).toEqual({ '/app/dist/server.js': ID.server });
    g._sentryDebugIds[SNIPPET_STACKS.chunk] = ID.chunk;
    expect(debugIdsOf(EVENT_STACK)).toEqual({ '/app/dist/chunks/orders-3f9a2c1b.js': ID.chunk, '/app/dist/server.js': ID.esm });
  });
});
