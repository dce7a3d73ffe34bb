import { describe, expect, it } from 'vitest';
import { isInApp, parseStack, runs } from './stack.ts';

/** The issue page's frame rule: the app's own code apart from libraries and the runtime (console/app/stack.ts). */
describe('stack frames, in-app or library', () => {
  it('reads V8 frames with and without a function name, and keeps the header', () => {
    const s = parseStack(
      [
        'TypeError: cart is undefined',
        '    at renderCart (https://shop.example.com/assets/cart.js:41:7)',
        '    at https://shop.example.com/assets/main.js:3:9',
        '    at dispatch (/srv/app/node_modules/react-dom/index.js:1:1)',
        '    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)',
        '    at async Promise.all (index 0)',
      ].join('\n'),
    );
    expect(s.header).toEqual(['TypeError: cart is undefined']);
    expect(s.frames.map((f) => [f.fn, f.file, f.line, f.column, f.inApp])).toEqual([
      ['renderCart', 'https://shop.example.com/assets/cart.js', 41, 7, true],
      [null, 'https://shop.example.com/assets/main.js', 3, 9, true],
      ['dispatch', '/srv/app/node_modules/react-dom/index.js', 1, 1, false],
      ['process.processTicksAndRejections', 'node:internal/process/task_queues', 95, 5, false],
      ['async Promise.all', 'index 0', null, null, false], // the runtime's own frame
    ]);
  });

  it('reads Firefox and Safari frames (no header line)', () => {
    const s = parseStack('renderCart@https://shop.example.com/assets/cart.js:41:7\n@https://shop.example.com/assets/vendor.8f2a.js:1:200');
    expect(s.header).toEqual([]);
    expect(s.frames.map((f) => [f.fn, f.inApp])).toEqual([
      ['renderCart', true],
      [null, false],
    ]);
  });

  it('calls libraries what a person triaging would', () => {
    for (const lib of [
      'https://shop.example.com/sentry.js',
      'https://browser.sentry-cdn.com/8.0.0/bundle.min.js',
      'https://shop.example.com/v1/w/cx.3f9a2c1b.js',
      '/app/node_modules/x/y.js',
      'C:\\app\\node_modules\\x.js',
      'node:fs',
      'internal/modules/cjs/loader.js',
      '<anonymous>',
      'native',
      '[native code]',
      'https://cdn.example.com/vendor~main.js',
    ]) {
      expect(isInApp(lib), lib).toBe(false);
    }
    for (const own of ['src/app.ts', '/srv/app/dist/server.js', 'https://shop.example.com/assets/checkout.js', 'webpack-internal:///./src/page.tsx']) {
      expect(isInApp(own), own).toBe(true);
    }
    expect(isInApp(null)).toBe(false);
  });

  it('groups consecutive frames of one kind, so library runs can be folded', () => {
    const s = parseStack('E: x\n    at a (src/a.ts:1:1)\n    at b (node_modules/b.js:1:1)\n    at c (node_modules/c.js:1:1)\n    at d (src/d.ts:1:1)');
    expect(runs(s.frames).map((r) => [r.inApp, r.frames.length])).toEqual([
      [true, 1],
      [false, 2],
      [true, 1],
    ]);
  });
});

describe("Sentry's wrapper frames in the console (issue 40)", () => {
  it('marks sentryWrapped and the instrument helpers as library frames, in any file', () => {
    const { frames } = parseStack(
      [
        'TypeError: x',
        '    at HTMLButtonElement.sentryWrapped (https://shop.example/assets/app.js:1:900)',
        '    at triggerHandlers (https://shop.example/assets/app.js:1:800)',
        '    at onBuy (https://shop.example/assets/app.js:1:120)',
      ].join('\n'),
    );
    expect(frames.map((f) => f.inApp)).toEqual([false, false, true]);
    expect(isInApp('https://shop.example/assets/app.js', 'Object.sentryWrapped')).toBe(false);
    expect(isInApp('https://shop.example/assets/app.js', 'onBuy')).toBe(true);
    expect(isInApp('https://shop.example/assets/app.js')).toBe(true);
  });
});
