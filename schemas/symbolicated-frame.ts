/**
 * One stack frame after symbolication (issue 37), as the processor stores it on an occurrence (`frames`, JSON) and a
 * group's samples, and as the console and the API show it: the frame as the client sent it (`minified`), its
 * original position when a source map resolved it, context lines from the map's `sourcesContent`, and which map
 * resolved it or why none did.
 */
export interface FramePosition {
  /** Function name ('' when anonymous). */
  fn: string;
  file: string;
  line?: number;
  col?: number;
}

/**
 * Why a frame kept its minified form:
 * - not_a_url: the frame's file is no URL a site serves (native code, an extension, a Node path);
 * - no_map: no kept map for this file (no deploy of the project served it with one, no upload, no debug id);
 * - map_refused: the map that names this file could not be read (invalid JSON or mappings, over a bound);
 * - line_out_of_range: the map has no mapping at this line and column;
 * - busy: the batch spent its budget of cold map parsing (LIMITS.sourceMaps.coldBytesPerBatch).
 */
export const UNRESOLVED_REASONS = ['not_a_url', 'no_map', 'map_refused', 'line_out_of_range', 'busy'] as const;
export type UnresolvedReason = (typeof UNRESOLVED_REASONS)[number];

/** How the map was found: the event's debug id for the file, the deploy its host or `deployId` names, or the served path. */
export type MapMatch = 'debug_id' | 'deploy' | 'path';

export type FrameResolution =
  | {
      status: 'resolved';
      match: MapMatch;
      /** The deploy whose build kept the map, or null for an uploaded one. */
      deployId: string | null;
      /** The upload's bundle, for an uploaded map. */
      bundleId?: string;
      /** The map's path in the build output or bundle. */
      mapName: string;
      debugId?: string;
    }
  | { status: 'unresolved'; reason: UnresolvedReason };

export interface ContextLines {
  /** Line number (1-based) of `lines[0]`. */
  firstLine: number;
  /** Up to LIMITS.sourceMaps.contextLines before and after the failing line, each cut to contextLineChars. */
  lines: string[];
  /** Index in `lines` of the failing line. */
  errorIndex: number;
}

export interface SymbolicatedFrame {
  minified: FramePosition;
  original?: FramePosition;
  context?: ContextLines;
  /** Decided on the original path when resolved (a `node_modules/` or `webpack/runtime` source is a library). */
  inApp: boolean;
  resolution: FrameResolution;
}
