import { describe, expect, it } from 'vitest';
import type { SymbolicatedFrame } from '../../schemas/api/errors.ts';
import { contextRows, functionName, shortId, lineCol, openFrameIndex, positionOf, resolutionNote, resolvedSummary } from './frames.ts';
import { runs } from './stack.ts';

/** The issue page's symbolicated frames in words (console/app/frames.ts, issue 37). */
const resolved: SymbolicatedFrame = {
  minified: { fn: 'r', file: 'https://shop.example.com/assets/index-3f9a2c1b.js', line: 1, col: 18433 },
  original: { fn: 'lineTotal', file: 'src/cart/totals.ts', line: 14, col: 27 },
  context: { firstLine: 12, lines: ['a', 'b', 'c'], errorIndex: 2 },
  inApp: true,
  resolution: { status: 'resolved', match: 'deploy', deployId: 'dep_1', mapName: 'assets/index-3f9a2c1b.js.map' },
};
const library: SymbolicatedFrame = {
  minified: { fn: 'Xo', file: 'https://shop.example.com/assets/vendor-0b1c2d3e.js', line: 1, col: 40211 },
  original: { fn: '', file: 'node_modules/react-dom/index.js', line: 5 },
  inApp: false,
  resolution: {
    status: 'resolved',
    match: 'debug_id',
    deployId: null,
    bundleId: 'b1',
    mapName: 'vendor.js.map',
    debugId: 'c1f0e2d3-4b5a-4c6d-8e7f-90a1b2c3d4e5',
  },
};
const unresolved = (reason: 'not_a_url' | 'no_map' | 'map_refused' | 'line_out_of_range' | 'busy', inApp = true): SymbolicatedFrame => ({
  minified: { fn: 't', file: 'https://shop.example.com/assets/x.js', line: 7, col: 1 },
  inApp,
  resolution: { status: 'unresolved', reason },
});

describe('symbolicated frames on the issue page', () => {
  it('reads the original position, or the minified one with the toggle or where none resolved', () => {
    expect(positionOf(resolved, 'original')).toEqual(resolved.original);
    expect(positionOf(resolved, 'minified')).toEqual(resolved.minified);
    expect(positionOf(unresolved('no_map'), 'original')).toEqual(unresolved('no_map').minified);
    expect(lineCol({ fn: 'f', file: 'a.js', line: 14, col: 27 })).toBe(':14:27');
    expect(lineCol({ fn: 'f', file: 'a.js', line: 14 })).toBe(':14');
    expect(lineCol({ fn: 'f', file: '<anonymous>' })).toBe('');
    expect(functionName({ fn: '', file: 'a.js' })).toBe('<anonymous>');
  });

  it('says which map resolved a frame, its deploy or none for an upload, and how it was found', () => {
    expect(resolutionNote(resolved)).toEqual({
      resolved: true,
      mapName: 'assets/index-3f9a2c1b.js.map',
      deployId: 'dep_1',
      how: 'from the deploy that served the file',
    });
    expect(resolutionNote(library)).toEqual({ resolved: true, mapName: 'vendor.js.map', deployId: null, how: 'matched by debug ID' });
  });

  it('shortens a deploy id to sit beside a frame', () => {
    expect(shortId('dep_64258b37c7b5a2d56651564755e60933')).toBe('dep_64258b37…');
    expect(shortId('dep_1')).toBe('dep_1');
  });

  it('says why a frame stayed minified, in words, for every reason', () => {
    const why = (r: Parameters<typeof unresolved>[0]) => (resolutionNote(unresolved(r)) as { why: string }).why;
    expect(why('no_map')).toBe('no source map for this file');
    expect(why('line_out_of_range')).toBe('line out of range of its map');
    expect(why('map_refused')).toBe('map could not be read');
    expect(why('not_a_url')).toBe('not a served file');
    expect(why('busy')).toBe('not resolved: processor busy');
  });

  it('numbers context lines from firstLine and marks the failing one only', () => {
    expect(contextRows(resolved.context!)).toEqual([
      { number: 12, text: 'a', failing: false },
      { number: 13, text: 'b', failing: false },
      { number: 14, text: 'c', failing: true },
    ]);
    // An index off the block marks nothing.
    expect(contextRows({ firstLine: 1, lines: ['a'], errorIndex: 4 }).some((r) => r.failing)).toBe(false);
  });

  it('opens the top in-app frame with source; folds library runs; sums up what resolved', () => {
    const frames = [unresolved('not_a_url', false), library, resolved, { ...resolved, original: { ...resolved.original!, fn: 'cartTotal' } }];
    expect(openFrameIndex(frames)).toBe(2);
    expect(openFrameIndex([library, unresolved('no_map')])).toBe(-1);
    expect(runs(frames).map((r) => [r.inApp, r.frames.length])).toEqual([
      [false, 2],
      [true, 2],
    ]);
    expect(resolvedSummary(frames)).toBe('3 of 4 frames resolved by source maps');
    expect(resolvedSummary([unresolved('no_map')])).toBeNull();
  });
});
