import { describe, expect, it } from 'vitest';
import { resolveEnvironment, type DeployRef } from './environment.ts';

const domains = { productionDomains: ['example.com', 'www.example.com'], previewDomains: ['*.preview.example.com'] };
const deploys = () => {
  const byId = new Map<string, DeployRef>();
  const bySha = new Map<string, DeployRef>();
  const prod: DeployRef = { id: 'dep_prod', gitSha: 'abc123', environment: 'production' };
  const prev: DeployRef = { id: 'dep_prev', gitSha: 'def456', environment: 'preview' };
  for (const d of [prod, prev]) {
    byId.set(d.id, d);
    bySha.set(d.gitSha!, d);
  }
  return { byId, bySha };
};

describe('resolveEnvironment', () => {
  it('uses the origin host when there is one', () => {
    expect(resolveEnvironment({ originHost: 'www.example.com' }, domains, deploys())).toBe('production');
    expect(resolveEnvironment({ originHost: 'pr-9.preview.example.com' }, domains, deploys())).toBe('preview');
    expect(resolveEnvironment({ originHost: 'localhost:3000' }, domains, deploys())).toBe('unknown');
  });

  it('matches the port the edge stamped: a domain with a port proves only that port; a bare host (also from older edges) is on 443', () => {
    const local = { productionDomains: ['localhost:8080', 'shop.example.com:443'], previewDomains: ['localhost'] };
    expect(resolveEnvironment({ originHost: 'localhost:8080' }, local, deploys())).toBe('production');
    expect(resolveEnvironment({ originHost: 'localhost:3000' }, local, deploys())).toBe('preview');
    expect(resolveEnvironment({ originHost: 'localhost' }, local, deploys())).toBe('preview');
    expect(resolveEnvironment({ originHost: 'shop.example.com' }, local, deploys())).toBe('production');
    expect(resolveEnvironment({ originHost: 'shop.example.com:80' }, local, deploys())).toBe('unknown');
    expect(resolveEnvironment({ originHost: 'www.example.com:8443' }, domains, deploys())).toBe('production');
  });

  it('never lets a deploy id override an origin that is not production', () => {
    expect(resolveEnvironment({ originHost: 'localhost', deployId: 'dep_prod' }, domains, deploys())).toBe('unknown');
  });

  it('without origin uses the deploy id, then the git sha', () => {
    expect(resolveEnvironment({ originHost: null, deployId: 'dep_prod' }, domains, deploys())).toBe('production');
    expect(resolveEnvironment({ originHost: null, deployId: 'dep_prev', gitSha: 'abc123' }, domains, deploys())).toBe('preview');
    expect(resolveEnvironment({ originHost: null, deployId: 'dep_unknown', gitSha: 'abc123' }, domains, deploys())).toBe('production');
    expect(resolveEnvironment({ originHost: null, gitSha: 'DEF456' }, domains, deploys())).toBe('preview');
    expect(resolveEnvironment({ originHost: null, gitSha: 'nope' }, domains, deploys())).toBe('unknown');
    expect(resolveEnvironment({ originHost: null }, domains, deploys())).toBe('unknown');
  });
});
