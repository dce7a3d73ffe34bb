import { describe, expect, it } from 'vitest';
import { loadRules, matchHeaders, matchRedirect } from './match.ts';
import { parseHeaders } from './parse-headers.ts';
import { parseRedirects } from './parse-redirects.ts';
import { pathSegments } from './pattern.ts';
import { HEADERS_PER_RULE_MAX, RULE_LINE_MAX_CHARS, RULES_MAX } from './rule-bounds.ts';

const redirectsOf = (text: string) => loadRules(parseRedirects(text).rules, []);
const match = (text: string, p: string, query = '') => matchRedirect(redirectsOf(text), pathSegments(p), query);

describe('_redirects: each form', () => {
  it('parses statuses, the default 301, force and comments', () => {
    const { rules, ignored } = parseRedirects(
      ['# moved pages', '/old /new', '/a /b 302', '/c /d 307!', '/e /f 308', '/app/* /index.html 200', '/gone /404.html 404', ''].join('\n'),
    );
    expect(ignored).toEqual([]);
    expect(rules.map((r) => [r.from, r.to, r.status, r.force, r.line])).toEqual([
      ['/old', '/new', 301, false, 2],
      ['/a', '/b', 302, false, 3],
      ['/c', '/d', 307, true, 4],
      ['/e', '/f', 308, false, 5],
      ['/app/*', '/index.html', 200, false, 6],
      ['/gone', '/404.html', 404, false, 7],
    ]);
  });

  it('matches splats and placeholders, first rule wins, trailing slash ignored', () => {
    const rules = '/blog/:year/:slug /posts/:year-:slug 301\n/blog/* /archive/:splat 302\n/* /index.html 200';
    expect(match(rules, '/blog/2024/hello')).toEqual({ kind: 'redirect', status: 301, location: '/posts/2024-hello', force: false });
    expect(match(rules, '/blog/2024/hello/')).toMatchObject({ location: '/posts/2024-hello' });
    expect(match(rules, '/blog/a/b/c')).toEqual({ kind: 'redirect', status: 302, location: '/archive/a/b/c', force: false });
    expect(match(rules, '/blog')).toMatchObject({ location: '/archive/' });
    expect(match(rules, '/users/42')).toEqual({ kind: 'rewrite', status: 200, path: '/index.html', force: false });
    expect(match('/a /b', '/c')).toBeUndefined();
  });

  it('keeps the query string on a redirect unless the target has one; external targets for redirects', () => {
    expect(match('/a /b', '/a', 'x=1')).toMatchObject({ location: '/b?x=1' });
    expect(match('/a /b?y=2', '/a', 'x=1')).toMatchObject({ location: '/b?y=2' });
    expect(match('/docs/* https://docs.example.com/:splat 301', '/docs/a/b')).toMatchObject({ location: 'https://docs.example.com/a/b' });
    expect(match('/x https://example.com:8443/y 302', '/x')).toMatchObject({ location: 'https://example.com:8443/y' });
  });

  it('never lets a request path put CR/LF (or anything raw) into a Location', () => {
    const r = match('/go/* /to/:splat 302\n/u/:id /user/:id 301', '/go/a\r\nSet-Cookie: x=1/b');
    expect(r).toMatchObject({ kind: 'redirect', location: '/to/a%0D%0ASet-Cookie%3A%20x%3D1/b' });
    expect(match('/go/* /to/:splat 302\n/u/:id /user/:id 301', '/u/a\nb')).toMatchObject({ location: '/user/a%0Ab' });
  });
});

describe('_redirects: refused lines, each with its reason', () => {
  const reasons = (text: string) => parseRedirects(text).ignored.map((i) => i.reason);

  it('refuses proxying (an external 200 or 404), dot segments, unbound placeholders, odd statuses, conditions', () => {
    expect(reasons('/api/* https://evil.example/:splat 200')[0]).toMatch(/no proxying/);
    expect(reasons('/x http://evil.example/ 404')[0]).toMatch(/no proxying/);
    expect(reasons('/x /../etc/passwd 200')[0]).toMatch(/\.\. segments/);
    expect(reasons('/x /a/./b 200')[0]).toMatch(/\.\. segments/);
    expect(reasons('/x /:id 301')[0]).toMatch(/:id/);
    expect(reasons('/x /:splat 301')[0]).toMatch(/:splat/);
    expect(reasons('/x /y 418')[0]).toMatch(/status 418/);
    expect(reasons('/store id=:id /blog/:id 301')[0]).toMatch(/query-string/);
    expect(reasons('/ /fr 302 Country=fr')[0]).toMatch(/conditions/);
    expect(reasons('/x')[0]).toMatch(/path and a target/);
    expect(reasons('x /y')[0]).toMatch(/start with \//);
    expect(reasons('https://example.com/* /y')[0]).toMatch(/start with \//);
    expect(reasons('/a/*/b /y')[0]).toMatch(/last segment/);
    expect(reasons('/a* /y')[0]).toMatch(/whole segment/);
    expect(reasons('/x relative 301')[0]).toMatch(/must be a path/);
    expect(reasons('/x /y\u0000 301')[0]).toMatch(/control/);
  });

  it('bounds: a huge line is refused unread, rules past RULES_MAX are cut with one line', () => {
    const huge = `/a /${'b'.repeat(10 * 1024 * 1024)}`;
    const parsed = parseRedirects(`${huge}\n/ok /fine`);
    expect(parsed.ignored).toEqual([{ line: 1, reason: `longer than ${RULE_LINE_MAX_CHARS} characters` }]);
    expect(parsed.rules.map((r) => r.from)).toEqual(['/ok']);

    const many = Array.from({ length: 100_000 }, (_, i) => `/r${i} /t${i} 301`).join('\n');
    const bounded = parseRedirects(many);
    expect(bounded.rules).toHaveLength(RULES_MAX);
    expect(bounded.ignored).toEqual([{ line: RULES_MAX + 1, reason: `past ${RULES_MAX} rules: this line and the rest of the file are ignored` }]);
    // Matching walks at most RULES_MAX rules, one comparison per segment.
    expect(matchRedirect(loadRules(bounded.rules, []), ['r999'], '')).toMatchObject({ location: '/t999' });
    expect(matchRedirect(loadRules(bounded.rules, []), ['r1000'], '')).toBeUndefined();
  });

  it('accepts CRLF files', () => {
    expect(parseRedirects('/a /b 302\r\n/c /d\r\n').rules.map((r) => [r.from, r.to, r.status])).toEqual([
      ['/a', '/b', 302],
      ['/c', '/d', 301],
    ]);
  });
});

describe('_headers', () => {
  it('parses paths and their headers; every matching rule applies, a later one replacing a name', () => {
    const { rules, ignored } = parseHeaders(
      [
        '# security',
        '/*',
        '  X-Frame-Options: DENY',
        '  Cache-Control: public, max-age=60',
        '/assets/*',
        '  Cache-Control: public, max-age=3600',
        '  X-Asset: yes',
      ].join('\n'),
    );
    expect(ignored).toEqual([]);
    const loaded = loadRules([], rules);
    expect(matchHeaders(loaded, pathSegments('/assets/app.js'))).toEqual([
      ['x-frame-options', 'DENY'],
      ['cache-control', 'public, max-age=3600'],
      ['x-asset', 'yes'],
    ]);
    expect(matchHeaders(loaded, pathSegments('/'))).toEqual([
      ['x-frame-options', 'DENY'],
      ['cache-control', 'public, max-age=60'],
    ]);
    const byId = loadRules([], parseHeaders('/users/:id\n  X-User: one').rules);
    expect(matchHeaders(byId, pathSegments('/users/42'))).toEqual([['x-user', 'one']]);
    expect(matchHeaders(byId, pathSegments('/users/42/x'))).toEqual([]);
  });

  it('refuses headers the server owns or that reach past the site, CR/LF injection, headers before a path', () => {
    const { rules, ignored } = parseHeaders(
      [
        '  X-Orphan: 1',
        '/*',
        '  Set-Cookie: session=1; Domain=.sites.example',
        '  Content-Length: 1',
        '  Transfer-Encoding: chunked',
        '  Connection: close',
        '  Location: https://evil.example/',
        '  X-Ok: fine\rSet-Cookie: a=1',
        '  Bad Name: x',
        '  X-Good: yes',
      ].join('\n'),
    );
    expect(rules).toEqual([{ path: '/*', headers: [['x-good', 'yes']], line: 2 }]);
    expect(ignored.map((i) => [i.line, i.reason])).toEqual([
      [1, 'a header before any path'],
      [3, 'Set-Cookie is set by the server, not by _headers'],
      [4, 'Content-Length is set by the server, not by _headers'],
      [5, 'Transfer-Encoding is set by the server, not by _headers'],
      [6, 'Connection is set by the server, not by _headers'],
      [7, 'Location is set by the server, not by _headers'],
      [8, 'control characters'],
      [9, 'not a `Name: value` header line'],
    ]);
  });

  it('bounds: headers per path, rules, line length; a refused path takes its headers with it', () => {
    const lots = ['/*', ...Array.from({ length: HEADERS_PER_RULE_MAX + 5 }, (_, i) => `  X-H${i}: v`)].join('\n');
    const parsed = parseHeaders(lots);
    expect(parsed.rules[0]!.headers).toHaveLength(HEADERS_PER_RULE_MAX);
    expect(parsed.ignored).toHaveLength(5);
    const rules = Array.from({ length: 100_000 }, (_, i) => `/p${i}\n  X-A: ${i}`).join('\n');
    expect(parseHeaders(rules).rules).toHaveLength(RULES_MAX);
    const refusedPath = parseHeaders('/a/*/b\n  X-A: 1\n/ok\n  X-B: 2');
    expect(refusedPath.rules.map((r) => r.path)).toEqual(['/ok']);
    expect(refusedPath.ignored).toHaveLength(1);
    expect(parseHeaders(`/*\n  X-Long: ${'v'.repeat(RULE_LINE_MAX_CHARS)}`).ignored[0]!.reason).toMatch(/longer than/);
  });
});
