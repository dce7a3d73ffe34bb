import { describe, expect, it } from 'vitest';
import { suggestFirstCheck } from './suggestion.ts';

const frame = { fn: 'loadUser', file: '/srv/app/src/users.ts', line: 12, col: 5, inApp: true };

describe('suggestFirstCheck', () => {
  it.each([
    ['TypeError', "Cannot read properties of undefined (reading 'id')", /undefined where code reads 'id'/],
    ['TypeError', 'user is undefined', /undefined or null/],
    ['TypeError', "undefined is not an object (evaluating 'a.b')", /undefined or null/],
    ['ReferenceError', 'gtag is not defined', /'gtag' is referenced but never declared/],
    ['TypeError', 'api.fetchUser is not a function', /'api.fetchUser' is called but is not a function/],
    ['TypeError', 'Failed to fetch', /network request failed.*CORS/],
    ['TypeError', 'NetworkError when attempting to fetch resource.', /network request failed/],
    ['SyntaxError', 'Unexpected token \'<\', "<!DOCTYPE "... is not valid JSON', /not JSON/],
    ['ChunkLoadError', 'Loading chunk 42 failed.', /chunk failed to load/],
    ['TypeError', 'Failed to fetch dynamically imported module: https://x/a.js', /chunk failed to load/],
    ['Error', 'connect ECONNREFUSED 127.0.0.1:5432', /connection was refused/],
    ['TimeoutError', 'The operation timed out.', /timed out/],
    ['RangeError', 'Maximum call stack size exceeded', /call stack overflowed/],
    ['Error', 'ResizeObserver loop completed with undelivered notifications.', /ResizeObserver/],
    ['Error', 'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory', /memory ran out/],
    ['Error', "EACCES: permission denied, open '/etc/x'", /permission was denied/],
  ])('%s: %s', (name, message, expected) => {
    const s = suggestFirstCheck(name, message, frame);
    expect(s).toMatch(expected);
    expect(s).toMatch(/^Hint, not a diagnosis:/);
    expect(s).toContain('loadUser (/srv/app/src/users.ts:12:5)');
  });

  it('has a generic hint and says when no frame of the app was found', () => {
    const s = suggestFirstCheck('Error', 'something odd');
    expect(s).toMatch(/^Hint, not a diagnosis:/);
    expect(s).toContain('No frame of your own code');
  });
});
