import type { EnvironmentStampedEvent } from './steps/outcome.ts';

/**
 * The tags an occurrence is faceted and filtered by (issue 40): the event's own tags, with the derived ones over them
 * (a client's tag of the same name does not hide what the service knows): `browser`, `os` and `device` from the
 * contexts (the SDK's or the User-Agent's), `release` (the SDK's release, else the deploy: gitSha, else deployId),
 * `environment` (the server's, §7.4), `url` (the request's URL without its query and fragment, else the event's path),
 * `level`, `runtime`. Each value at most TAG_VALUE_MAX characters, as the event's own tags.
 */
export const DERIVED_TAGS = ['browser', 'os', 'device', 'release', 'environment', 'url', 'level', 'runtime'] as const;
const TAG_VALUE_MAX = 200;

export function facetTagsOf(e: EnvironmentStampedEvent): Record<string, string> {
  const ev = e.event;
  const c = ev.context;
  const tags: Record<string, string> = c?.tags ? { ...c.tags } : {};
  const set = (k: string, v: unknown) => {
    if (typeof v === 'string' && v !== '') tags[k] = v.length > TAG_VALUE_MAX ? v.slice(0, TAG_VALUE_MAX) : v;
    else delete tags[k];
  };
  set('browser', c?.contexts?.browser?.name);
  set('os', c?.contexts?.os?.name);
  set('device', c?.contexts?.device?.family ?? c?.contexts?.device?.model);
  set('release', c?.release ?? ev.gitSha ?? ev.deployId);
  set('environment', e.environment);
  set('url', urlOf(c?.request?.url) ?? ev.path);
  set('level', c?.level ?? 'error');
  set('runtime', ev.runtime);
  return tags;
}

function urlOf(url: string | undefined): string | undefined {
  if (!url) return undefined;
  const end = url.search(/[?#]/);
  return end === -1 ? url : url.slice(0, end);
}
