import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { computeFingerprint, groupIdFor, normalizeMessage, stripContentHashes } from './fingerprint.ts';

const stackAt = (line: number, host = 'app.example.com') =>
  `TypeError: x\n    at loadUser (https://${host}/assets/users.js:${line}:7)\n    at dispatch (https://${host}/node_modules/react/index.js:1:1)`;

describe('fingerprint', () => {
  it('strips numbers, hex ids and uuids from the message', () => {
    expect(normalizeMessage('User 123 not found after 4.5s')).toBe('User <n> not found after <n>s');
    expect(normalizeMessage('order 550e8400-e29b-41d4-a716-446655440000 missing')).toBe('order <uuid> missing');
    expect(normalizeMessage('object 0x7ffd1a2b and 5f2b9c1d3e4a gone')).toBe('object <hex> and <hex> gone');
  });

  it('groups messages that differ only in numbers', () => {
    const a = computeFingerprint('Error', 'User 1 not found', stackAt(10));
    const b = computeFingerprint('Error', 'User 98765 not found', stackAt(10));
    expect(a.fingerprint).toBe(b.fingerprint);
  });

  it('ignores line and column and the host of the first in-app frame', () => {
    const a = computeFingerprint('TypeError', 'x', stackAt(10));
    const b = computeFingerprint('TypeError', 'x', stackAt(99, 'pr-7.preview.example.com'));
    expect(a.fingerprint).toBe(b.fingerprint);
  });

  it('separates different names, messages and in-app frames', () => {
    const base = computeFingerprint('TypeError', 'x', stackAt(1)).fingerprint;
    expect(computeFingerprint('RangeError', 'x', stackAt(1)).fingerprint).not.toBe(base);
    expect(computeFingerprint('TypeError', 'y', stackAt(1)).fingerprint).not.toBe(base);
    expect(computeFingerprint('TypeError', 'x', stackAt(1).replace('loadUser', 'saveUser')).fingerprint).not.toBe(base);
  });

  it('is not changed by library frames above the first in-app frame', () => {
    const a = computeFingerprint('E', 'm', '    at lib (/app/node_modules/x/i.js:1:1)\n    at mine (/app/src/a.ts:3:3)');
    const b = computeFingerprint('E', 'm', '    at other (/app/node_modules/y/j.js:9:9)\n    at mine (/app/src/a.ts:30:3)');
    expect(a.fingerprint).toBe(b.fingerprint);
    expect(a.inAppFrame).toMatchObject({ fn: 'mine', file: '/app/src/a.ts' });
  });

  it('derives a deterministic group id per project', () => {
    const fp = computeFingerprint('E', 'm', '').fingerprint;
    expect(groupIdFor('prj_a', fp)).toMatch(/^grp_[0-9a-f]{24}$/);
    expect(groupIdFor('prj_a', fp)).toBe(groupIdFor('prj_a', fp));
    expect(groupIdFor('prj_b', fp)).not.toBe(groupIdFor('prj_a', fp));
    // Remembered or not, the id is the stored formula's: ids in the database stay valid.
    expect(groupIdFor('prj_a', fp)).toBe('grp_' + createHash('sha256').update(`prj_a:${fp}`).digest('hex').slice(0, 24));
  });
});

describe('content hashes in file names (one issue across deploys)', () => {
  it.each([
    ['/assets/index-3f9a2c1b.js', '/assets/index-[hash].js'],
    ['/assets/index-BxYzkQaw.js', '/assets/index-[hash].js'],
    ['/assets/index-Bx_9kQ-a.js', '/assets/index-[hash].js'],
    ['/assets/date-picker-widget.js', '/assets/date-picker-widget.js'],
    ['/static/js/main.8e1d7f0a.chunk.js', '/static/js/main.[hash].chunk.js'],
    ['/main-4PKGQX7N.js', '/main-[hash].js'],
    ['/chunks/4PKGQX7N.js', '/chunks/[hash].js'],
    ['/_next/static/chunks/pages/index-3f9a2c1b4e5d6f70.js', '/_next/static/chunks/pages/index-[hash].js'],
    ['/_next/static/x1Y2z3AbCdEfGhIjKlMn_/_buildManifest.js', '/_next/static/[hash]/_buildManifest.js'],
  ])('%s → %s', (file, stripped) => {
    expect(stripContentHashes(file)).toBe(stripped);
  });

  it.each(['/assets/polyfills.js', 'src/components/UserProfile.tsx', 'src/userProfileCard.ts', '/logs/20261126/app.js', 'node:internal/process'])(
    'keeps names that are words: %s',
    (file) => {
      expect(stripContentHashes(file)).toBe(file);
    },
  );

  it('the same error from two deploys of a bundle (new hashes) is one issue; another file is another', () => {
    const at = (file: string) => `TypeError: x\n    at checkout (https://app.example.com/assets/${file}:1:71)`;
    const first = computeFingerprint('TypeError', 'x', at('main-3F9A2C1B.js')).fingerprint;
    expect(computeFingerprint('TypeError', 'x', at('main-8E1D7F0A.js')).fingerprint).toBe(first);
    expect(computeFingerprint('TypeError', 'x', at('vendor-8E1D7F0A.js')).fingerprint).not.toBe(first);
  });
});
