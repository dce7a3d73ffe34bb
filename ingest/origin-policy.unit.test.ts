import { describe, expect, it } from 'vitest';
import { originHostOf } from './origin-policy.ts';

describe('originHostOf', () => {
  it('stamps the port unless it is https on 443, using the scheme default when the Origin names none', () => {
    expect(originHostOf('https://App.Example.com')).toBe('app.example.com');
    expect(originHostOf('https://app.example.com:443')).toBe('app.example.com');
    expect(originHostOf('https://app.example.com:8443')).toBe('app.example.com:8443');
    expect(originHostOf('http://localhost:8080')).toBe('localhost:8080');
    expect(originHostOf('http://localhost')).toBe('localhost:80');
    expect(originHostOf('http://localhost:443')).toBe('localhost');
  });

  it('keeps IPv6 literals bracketed and has no host for opaque origins', () => {
    expect(originHostOf('http://[::1]:8080')).toBe('[::1]:8080');
    expect(originHostOf('https://[::1]')).toBe('[::1]');
    expect(originHostOf('null')).toBeNull();
    expect(originHostOf('not a url')).toBeNull();
  });
});
