import { describe, expect, it } from 'vitest';
import { environmentOfHost, hostMatches, matchesAny } from './host-patterns.ts';

/** A table of `host pattern yes|no` rows, one per line: the host as the edge stamps it, and whether the pattern matches it. */
function expectMatches(table: string) {
  for (const row of table.trim().split('\n')) {
    const [host, pattern, matches] = row.trim().split(/\s+/);
    expect(hostMatches(host!, pattern!), row.trim()).toBe(matches === 'yes');
  }
}

describe('hostMatches', () => {
  it('matches exact hosts and subdomain wildcards, case and port insensitive', () => {
    expectMatches(`
      Example.com                            example.com              yes
      example.com:443                        example.com              yes
      pr-1.preview.example.com               *.preview.example.com    yes
      a.b.preview.example.com                *.preview.example.com    yes
      preview.example.com                    *.preview.example.com    no
      evilexample.com                        example.com              no
      x.evilpreview.example.com.attacker.io  *.preview.example.com    no
    `);
  });

  it('a pattern without a port matches its host on any port; one with a port only that port', () => {
    // The last four rows: a malformed port or an empty host never matches, not even itself.
    expectMatches(`
      app.example.com:8080                   app.example.com             yes
      pr-1.preview.example.com:3000          *.preview.example.com       yes
      localhost:8080                         localhost:8080              yes
      LOCALHOST:08080                        localhost:8080              yes
      localhost:8081                         localhost:8080              no
      localhost                              localhost:8080              no
      other:8080                             localhost:8080              no
      pr-1.preview.example.com:3000          *.preview.example.com:3000  yes
      pr-1.preview.example.com:3001          *.preview.example.com:3000  no
      preview.example.com:3000               *.preview.example.com:3000  no
      example.com:8080                       example.com:                no
      example.com:8080                       example.com:http            no
      example.com:70000                      example.com:70000           no
      :8080                                  :8080                       no
    `);
  });

  it('a host without a port is on 443 (https), the one default port the edge leaves out of its stamp', () => {
    expectMatches(`
      example.com        example.com:443   yes
      example.com:443    example.com:443   yes
      example.com        example.com:80    no
      example.com:80     example.com:80    yes
      example.com:80     example.com:443   no
    `);
  });

  it('ignores trailing dots on host and pattern, with or without a port', () => {
    expectMatches(`
      example.com.           example.com         yes
      example.com.:8080      example.com:8080    yes
      example.com:8080       example.com.:8080   yes
      a.example.com.:8080    *.example.com.      yes
    `);
  });

  it('handles IPv6 literals, bracketed or not', () => {
    expectMatches(`
      [::1]:8080   [::1]:8080   yes
      [::1]:8080   [::1]        yes
      [::1]:8080   ::1          yes
      [::1]:8081   [::1]:8080   no
      [::1]        [::1]:443    yes
      [::2]:8080   [::1]:8080   no
    `);
  });
});

describe('matchesAny and environmentOfHost', () => {
  const domains = { productionDomains: ['localhost:8080', 'app.example.com'], previewDomains: ['*.preview.localhost', 'localhost'] };

  it('production wins over preview; the port decides between them for the same host', () => {
    const hosts = ['localhost:8080', 'localhost:5173', 'app.example.com:8443', 'pr-2.preview.localhost:8080'];
    expect(hosts.map((h) => environmentOfHost(domains, h))).toEqual(['production', 'preview', 'production', 'preview']);
    expect(environmentOfHost({ productionDomains: ['localhost:8080'], previewDomains: [] }, 'localhost:9090')).toBeNull();
  });

  it('matchesAny is true when one pattern matches', () => {
    expect(matchesAny('localhost:8080', ['example.com', 'localhost:8080'])).toBe(true);
    expect(matchesAny('localhost:8081', ['example.com', 'localhost:8080'])).toBe(false);
  });
});
