import type { SourceMapRef } from '../../../domain/source-maps/source-maps-repository.ts';
import type { MapMatch } from '../../../schemas/symbolicated-frame.ts';

/**
 * Which kept map resolves a frame (issue 37), in this order:
 * 1. the debug id the event carries for the frame's file (the bundler wrote it into the file and its map alike);
 * 2. the deploy that served the file: the frame URL's per-deploy host (`dep-….<SITES_DOMAIN>`), else the deploy the
 *    event names (`deployId`, or the commit of `gitSha`: a Sentry `release` that is a sha), else the live deploy for
 *    the project's production and custom-domain hosts;
 * 3. the newest kept map of the project for the file's served path: a content-hashed file was served by exactly one
 *    deploy, so a page loaded before a newer deploy still resolves against the deploy that served it while its maps
 *    are kept; an upload's `~/path` matches any host.
 * Only the event's own project's maps are ever candidates.
 */
export interface FrameFile {
  /** The URL's path (`/assets/index-3f9a2c1b.js`), or undefined when the file is no http(s) URL. */
  servedPath?: string;
  /** The URL's host, lower case, without its port. */
  host?: string;
  debugId?: string;
}

export interface ProjectMaps {
  byPath: Map<string, SourceMapRef[]>;
  byDebugId: Map<string, SourceMapRef>;
  liveDeployId: string | null;
}

export interface ChosenMap {
  ref: SourceMapRef;
  match: MapMatch;
}

/** The file of a frame as the maps are indexed: its served path and host when it is an http(s) URL, its debug id. */
export function frameFile(file: string, debugIds: Record<string, string> | undefined): FrameFile {
  const out: FrameFile = {};
  if (/^https?:\/\//i.test(file)) {
    try {
      const u = new URL(file);
      // Stored decoded (the builder's file path, an upload's url): `/assets/my%20file.js` is `/assets/my file.js`.
      out.servedPath = safeDecode(u.pathname);
      out.host = u.hostname.toLowerCase();
    } catch {
      // Not a URL after all: only a debug id can resolve it.
    }
  }
  if (debugIds) {
    const id = debugIds[file] ?? (out.servedPath !== undefined ? debugIdByPath(debugIds, out.servedPath) : undefined);
    if (id) out.debugId = id;
  }
  return out;
}

function safeDecode(pathname: string): string {
  try {
    return decodeURIComponent(pathname);
  } catch {
    return pathname;
  }
}

/** An SDK may key a debug id by the file's full URL on another host (a CDN) or by its path alone. */
function debugIdByPath(debugIds: Record<string, string>, servedPath: string): string | undefined {
  for (const [file, id] of Object.entries(debugIds)) {
    if (file === servedPath || file.endsWith(servedPath)) return id;
  }
  return undefined;
}

/** The deploy a host serves by its name alone: `dep-abc…` under the sites domain is that deploy. */
export function deployOfHost(host: string | undefined, sitesDomain: string): string | undefined {
  if (!host) return undefined;
  const suffix = `.${sitesDomain.toLowerCase()}`;
  if (!host.endsWith(suffix)) return undefined;
  const label = host.slice(0, -suffix.length);
  return label.startsWith('dep-') && !label.includes('.') ? label.replace(/-/g, '_') : undefined;
}

export function chooseMap(
  f: FrameFile,
  maps: ProjectMaps | undefined,
  event: { deployId?: string; gitSha?: string },
  sitesDomain: string,
): ChosenMap | undefined {
  if (!maps) return undefined;
  if (f.debugId) {
    const ref = maps.byDebugId.get(f.debugId);
    if (ref) return { ref, match: 'debug_id' };
  }
  if (f.servedPath === undefined) return undefined;
  const candidates = maps.byPath.get(f.servedPath);
  if (!candidates?.length) return undefined;
  const named = deployOfHost(f.host, sitesDomain) ?? event.deployId;
  const sha = event.gitSha?.toLowerCase();
  const ref =
    (named !== undefined ? candidates.find((c) => c.deployId === named) : undefined) ??
    (sha && sha.length >= 7 ? candidates.find((c) => c.gitSha && (c.gitSha.startsWith(sha) || sha.startsWith(c.gitSha))) : undefined) ??
    (maps.liveDeployId ? candidates.find((c) => c.deployId === maps.liveDeployId) : undefined);
  if (ref) return { ref, match: 'deploy' };
  return { ref: candidates[0]!, match: 'path' };
}
