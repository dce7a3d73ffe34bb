import { describe, expect, it } from 'vitest';
import { deployIdOfHost, nameDeploy, type DeployNaming, type DeployQuestion } from './deploy-naming.ts';

const naming = (o: Partial<DeployNaming> = {}): DeployNaming => ({
  byId: new Map([
    ['dep_aa', 'dep_aa'],
    ['dep_bb', 'dep_bb'],
  ]),
  bySha: new Map([['abc123', 'dep_bb']]),
  live: { id: 'dep_live', finishedAt: 1_000 },
  ...o,
});
const q = (o: Partial<DeployQuestion>): DeployQuestion => ({
  projectId: 'p',
  originHost: null,
  release: undefined,
  receivedAt: 2_000,
  environment: 'unknown',
  ...o,
});

describe('deploy naming', () => {
  it("reads a deploy's own host, any port, only under the sites domain", () => {
    expect(deployIdOfHost('dep-aa.sites.test', 'sites.test')).toBe('dep_aa');
    expect(deployIdOfHost('DEP-AA.Sites.Test:8080', 'sites.test')).toBe('dep_aa');
    expect(deployIdOfHost('dep-aa.sites.test.evil.net', 'sites.test')).toBeUndefined();
    expect(deployIdOfHost('shop.sites.test', 'sites.test')).toBeUndefined();
    expect(deployIdOfHost('x.dep-aa.sites.test', 'sites.test')).toBeUndefined();
    expect(deployIdOfHost(null, 'sites.test')).toBeUndefined();
  });

  it('release as deploy id, then as git sha (any case), then the deploy host, then the live deploy of a production host', () => {
    expect(nameDeploy(q({ release: 'dep_aa', originHost: 'dep-bb.sites.test' }), naming(), 'sites.test')).toBe('dep_aa');
    expect(nameDeploy(q({ release: ' ABC123 ' }), naming(), 'sites.test')).toBe('dep_bb');
    expect(nameDeploy(q({ release: 'web@1', originHost: 'dep-aa.sites.test' }), naming(), 'sites.test')).toBe('dep_aa');
    expect(nameDeploy(q({ release: 'web@1', originHost: 'dep-zz.sites.test', environment: 'production' }), naming(), 'sites.test')).toBe('');
    expect(nameDeploy(q({ originHost: 'shop.example.com', environment: 'production' }), naming(), 'sites.test')).toBe('dep_live');
    expect(nameDeploy(q({ originHost: 'pr.example.com', environment: 'preview' }), naming(), 'sites.test')).toBe('');
    expect(nameDeploy(q({ originHost: null, environment: 'production' }), naming(), 'sites.test')).toBe('');
  });

  it('the live deploy only for a session received after it was built', () => {
    const n = naming();
    expect(nameDeploy(q({ originHost: 'shop.example.com', environment: 'production', receivedAt: 999 }), n, 'sites.test')).toBe('');
    expect(nameDeploy(q({ originHost: 'shop.example.com', environment: 'production', receivedAt: 1_000 }), n, 'sites.test')).toBe('dep_live');
    expect(
      nameDeploy(q({ originHost: 'shop.example.com', environment: 'production' }), naming({ live: { id: 'dep_live', finishedAt: null } }), 'sites.test'),
    ).toBe('');
  });
});
