import { describe, expect, it } from 'vitest';
import type { SourceMapRef } from '../../../domain/source-maps/source-maps-repository.ts';
import { chooseMap, deployOfHost, frameFile, type ProjectMaps } from './map-choice.ts';

const ref = (id: string, over: Partial<SourceMapRef> = {}): SourceMapRef => ({
  id,
  projectId: 'prj_a',
  deployId: null,
  bundleId: null,
  servedPath: '/assets/app.js',
  debugId: null,
  mapName: 'assets/app.js.map',
  size: 10,
  createdAt: 0,
  gitSha: null,
  ...over,
});

/** Newest first, as the repository answers. */
const newest = ref('smap_new', { deployId: 'dep_new', gitSha: 'cccccccccccc' });
const live = ref('smap_live', { deployId: 'dep_live', gitSha: 'bbbbbbbbbbbb' });
const old = ref('smap_old', { deployId: 'dep_old', gitSha: 'aaaaaaaaaaaa' });
const uploaded = ref('smap_up', { bundleId: 'b1', servedPath: null, debugId: '0f0f0f0f-0000-4000-8000-000000000001' });
const maps: ProjectMaps = {
  byPath: new Map([['/assets/app.js', [newest, live, old]]]),
  byDebugId: new Map([[uploaded.debugId!, uploaded]]),
  liveDeployId: 'dep_live',
};
const choose = (file: string, event: { deployId?: string; gitSha?: string } = {}, debugIds?: Record<string, string>) =>
  chooseMap(frameFile(file, debugIds), maps, event, 'sites.test');

describe('which kept map resolves a frame', () => {
  it("the event's debug id for the file first, whatever the host", () => {
    const url = 'https://dep-old.sites.test/assets/app.js';
    expect(choose(url, {}, { [url]: uploaded.debugId! })).toEqual({ ref: uploaded, match: 'debug_id' });
    // Keyed by its path alone (an SDK that saw a relative file) it is found too.
    expect(choose(url, {}, { '/assets/app.js': uploaded.debugId! })).toEqual({ ref: uploaded, match: 'debug_id' });
  });

  it('then the deploy the per-deploy host names, then the deploy or commit the event names, then the live deploy', () => {
    expect(choose('https://dep-old.sites.test/assets/app.js')).toEqual({ ref: old, match: 'deploy' });
    expect(choose('https://shop.example.com/assets/app.js', { deployId: 'dep_old' })).toEqual({ ref: old, match: 'deploy' });
    expect(choose('https://shop.example.com/assets/app.js', { gitSha: 'AAAAAAA' })).toEqual({ ref: old, match: 'deploy' });
    expect(choose('https://shop.example.com/assets/app.js')).toEqual({ ref: live, match: 'deploy' });
  });

  it('else the newest map for the served path; none for another path, a non-URL or no maps', () => {
    expect(chooseMap(frameFile('https://cdn.example.net/assets/app.js', undefined), { ...maps, liveDeployId: null }, {}, 'sites.test')).toEqual({
      ref: newest,
      match: 'path',
    });
    expect(choose('https://shop.example.com/assets/other.js')).toBeUndefined();
    expect(choose('/srv/app/dist/app.js')).toBeUndefined();
    expect(chooseMap(frameFile('https://shop.example.com/assets/app.js', undefined), undefined, {}, 'sites.test')).toBeUndefined();
  });

  it('reads a frame URL as the builder stores paths: decoded, without query or hash', () => {
    expect(frameFile('https://shop.example.com/assets/my%20app.js?v=3#x', undefined)).toEqual({ servedPath: '/assets/my app.js', host: 'shop.example.com' });
    expect(frameFile('https://shop.example.com/assets/%E0%A4%A.js', undefined).servedPath).toBe('/assets/%E0%A4%A.js');
  });

  it('a per-deploy host is the deploy only under the sites domain', () => {
    expect(deployOfHost('dep-abc.sites.test', 'sites.test')).toBe('dep_abc');
    expect(deployOfHost('dep-abc.evil.test', 'sites.test')).toBeUndefined();
    expect(deployOfHost('x.dep-abc.sites.test', 'sites.test')).toBeUndefined();
    expect(deployOfHost('shop.sites.test', 'sites.test')).toBeUndefined();
  });
});
