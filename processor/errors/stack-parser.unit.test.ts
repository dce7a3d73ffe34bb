import { describe, expect, it } from 'vitest';
import { firstInAppFrame, isInAppFile, normalizeFrameFile, parseStack } from './stack-parser.ts';

const NODE_STACK = `TypeError: Cannot read properties of undefined (reading 'id')
    at loadUser (/srv/app/src/users.ts:12:5)
    at async Promise.all (index 0)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
    at async handler (/srv/app/node_modules/fastify/lib/route.js:300:9)`;

const CHROME_STACK = `TypeError: Cannot read properties of null (reading 'value')
    at HTMLButtonElement.onClick (https://app.example.com/assets/index-4f3a.js:2:1534)
    at flush (https://app.example.com/service/cx.js:1:200)
    at <anonymous>:1:1`;

const CHROME_LIB_FIRST = `Error: boom
    at Object.dispatch (chrome-extension://abcdefgh/content.js:10:3)
    at https://app.example.com/service/cx.js?v=3:1:99
    at https://app.example.com/assets/vendor.js:5:10
    at submitForm (https://app.example.com/assets/checkout.js:40:12)`;

const FIREFOX_STACK = `onClick@https://app.example.com/assets/index-4f3a.js:2:1534
dispatch@moz-extension://1234-5678/inject.js:1:20
@https://app.example.com/assets/main.js:10:1`;

const SAFARI_STACK = `onClick@https://app.example.com/assets/index-4f3a.js:2:1534
forEach@[native code]
global code@https://app.example.com/:12:34`;

describe('parseStack', () => {
  it('parses V8 (Node) frames, async frames and internals', () => {
    const frames = parseStack(NODE_STACK);
    expect(frames[0]).toMatchObject({ fn: 'loadUser', file: '/srv/app/src/users.ts', line: 12, col: 5, inApp: true });
    expect(frames[1]).toMatchObject({ fn: 'Promise.all', inApp: false });
    expect(frames[2]).toMatchObject({ file: 'node:internal/process/task_queues', inApp: false });
    expect(frames[3]).toMatchObject({ fn: 'handler', inApp: false });
    expect(frames).toHaveLength(4);
  });

  it('parses V8 (Chrome) frames and skips the browser client and anonymous code', () => {
    const frames = parseStack(CHROME_STACK);
    expect(frames.map((f) => f.inApp)).toEqual([true, false, false]);
    expect(firstInAppFrame(frames)).toMatchObject({ fn: 'HTMLButtonElement.onClick', line: 2, col: 1534 });
  });

  it('parses frames without a function name and skips extension URLs and cx.js with a query', () => {
    const frames = parseStack(CHROME_LIB_FIRST);
    expect(frames[1]).toMatchObject({ fn: '', file: 'https://app.example.com/service/cx.js?v=3', line: 1, col: 99, inApp: false });
    expect(frames[0]!.inApp).toBe(false);
    expect(frames[2]!.inApp).toBe(true);
  });

  it('parses Firefox frames', () => {
    const frames = parseStack(FIREFOX_STACK);
    expect(frames).toHaveLength(3);
    expect(frames[0]).toMatchObject({ fn: 'onClick', file: 'https://app.example.com/assets/index-4f3a.js', line: 2, col: 1534, inApp: true });
    expect(frames[1]!.inApp).toBe(false);
    expect(frames[2]).toMatchObject({ fn: '', file: 'https://app.example.com/assets/main.js', line: 10, col: 1, inApp: true });
  });

  it('parses Safari frames including native code', () => {
    const frames = parseStack(SAFARI_STACK);
    expect(frames[1]).toMatchObject({ fn: 'forEach', inApp: false });
    expect(frames[2]).toMatchObject({ fn: 'global code', file: 'https://app.example.com/', line: 12, col: 34, inApp: true });
  });

  it('treats the message header as no frame', () => {
    expect(parseStack('Error: something went wrong')).toEqual([]);
    expect(parseStack('')).toEqual([]);
  });
});

describe('isInAppFile', () => {
  it.each([
    ['/app/node_modules/react-dom/index.js', false],
    ['node:fs', false],
    ['internal/modules/cjs/loader.js', false],
    ['safari-web-extension://x/a.js', false],
    ['safari-extension://x/a.js', false],
    ['https://x.com/static/cx.js', false],
    ['https://x.com/static/cx.min.js', false],
    // Error-reporting SDKs are never the culprit (issue 23: a Sentry browser captureMessage blamed the SDK).
    ['https://shop.example.com/sentry.js', false],
    ['https://shop.example.com/assets/vendor-sentry.3f9a2c1b.js?v=2', false],
    ['https://browser.sentry-cdn.com/8.0.0/bundle.tracing.min.js', false],
    ['webpack:///./node_modules/@sentry/browser/build/npm/esm/exports.js', false],
    ['/app/src/@sentry/core/x.js', false],
    ['https://us-assets.i.posthog.com/static/array.js', false],
    ['https://x.com/static/posthog.min.js', false],
    ['https://shop.example.com/assets/sentry-setup-notes.txt', true],
    ['https://shop.example.com/assets/sentryish/app.js', true],
    ['/srv/app/sentry-node-app.mjs', true],
    ['/srv/app/src/sentry-setup.js', true],
    ['native', false],
    ['<anonymous>', false],
    ['/srv/app/dist/server.js', true],
    ['webpack:///src/app.tsx', true],
  ])('%s -> %s', (file, expected) => {
    expect(isInAppFile(file)).toBe(expected);
  });
});

describe('normalizeFrameFile', () => {
  it('keeps only the path of URLs so hosts do not split an issue', () => {
    expect(normalizeFrameFile('https://app.example.com/assets/a.js?v=1#x')).toBe('/assets/a.js');
    expect(normalizeFrameFile('https://pr-12.preview.example.com/assets/a.js')).toBe('/assets/a.js');
    expect(normalizeFrameFile('/srv/app/src/x.ts')).toBe('/srv/app/src/x.ts');
  });
});

describe("Sentry's wrapper frames are the SDK's, not the app's (issue 40)", () => {
  it('sentryWrapped and the instrument helpers are never the culprit, in whatever file they were bundled', () => {
    const stack = [
      'TypeError: x is undefined',
      '    at HTMLButtonElement.sentryWrapped (https://shop.example/assets/app.3f9a2c.js:1:900)',
      '    at globalDOMEventHandler (https://shop.example/assets/app.3f9a2c.js:1:700)',
      '    at onBuy (https://shop.example/assets/app.3f9a2c.js:1:120)',
    ].join('\n');
    const frames = parseStack(stack);
    expect(frames.map((f) => f.inApp)).toEqual([false, false, true]);
    expect(firstInAppFrame(frames)?.fn).toBe('onBuy');
    expect(parseStack('Error: x\n    at sentryWrapped (https://a.example/app.js:1:1)')[0]!.inApp).toBe(false);
    expect(parseStack('Error: x\n    at Object.sentryWrapper (/srv/app/server.js:1:1)')[0]!.inApp).toBe(false);
    expect(parseStack('Error: x\n    at instrumentFetch (/srv/app/server.js:1:1)')[0]!.inApp).toBe(false);
    expect(parseStack('sentryWrapped@https://a.example/app.js:1:1')[0]!.inApp).toBe(false);
    // An app's own function that only resembles one stays the app's.
    expect(parseStack('Error: x\n    at mySentryWrappedThing (https://a.example/app.js:1:1)')[0]!.inApp).toBe(true);
    expect(parseStack('Error: x\n    at instrumentOrders (https://a.example/app.js:1:1)')[0]!.inApp).toBe(true);
    // Frames inside @sentry/* files were already the SDK's.
    expect(parseStack('Error: x\n    at wrap (webpack://shop/node_modules/@sentry/browser/build/npm/esm/helpers.js:1:1)')[0]!.inApp).toBe(false);
  });
});
