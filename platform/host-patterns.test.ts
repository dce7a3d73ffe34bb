import { describe, expect, it } from 'vitest';
import { hostMatches } from './host-patterns.ts';

describe('hostMatches', () => {
  it('matches exact hosts and subdomain wildcards, case and port insensitive', () => {
    expect(hostMatches('Example.com', 'example.com')).toBe(true);
    expect(hostMatches('example.com:443', 'example.com')).toBe(true);
    expect(hostMatches('pr-1.preview.example.com', '*.preview.example.com')).toBe(true);
    expect(hostMatches('a.b.preview.example.com', '*.preview.example.com')).toBe(true);
    expect(hostMatches('preview.example.com', '*.preview.example.com')).toBe(false);
    expect(hostMatches('evilexample.com', 'example.com')).toBe(false);
    expect(hostMatches('x.evilpreview.example.com.attacker.io', '*.preview.example.com')).toBe(false);
  });
});
