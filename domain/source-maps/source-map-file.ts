import { normalizeDebugId } from '../../schemas/debug-id.ts';
import { LIMITS } from '../../schemas/limits.ts';

/**
 * Whether a file is a source map this service keeps (issue 37), checked before it is stored, whoever brings it (a
 * build's output, sentry-cli's bundle, `cx sourcemaps upload`): a tenant's map is hostile until checked. A map is a
 * JSON object of version 3 with `mappings` (a string) or `sections` (an index map), at most LIMITS.sourceMaps.mapBytes,
 * its sections nested at most `sectionDepth` deep and `sections` in all. Its debug id (the map's `debugId`, or
 * sentry-cli 2.x's `debug_id`) is read here. The mappings themselves are decoded only by the processor, which refuses
 * a map whose mappings do not decode (`map_refused`), never crashes on it.
 */
export const MAP_REFUSALS = [
  'map_too_large',
  'map_invalid_json',
  'not_a_source_map',
  'map_invalid_mappings',
  'map_sections_too_deep',
  'map_too_many_sections',
] as const;
export type MapRefusal = (typeof MAP_REFUSALS)[number];

export type InspectedMap = { kind: 'ok'; debugId?: string; map: RawSourceMap } | { kind: 'refused'; reason: MapRefusal; detail: string };

/** The fields of a map this service reads; anything else in the file is ignored. */
export interface RawSourceMap {
  version: 3;
  mappings?: string;
  sections?: Array<{ offset: { line: number; column: number }; map: RawSourceMap }>;
  sources?: Array<string | null>;
  sourcesContent?: Array<string | null>;
  names?: string[];
  sourceRoot?: string;
  file?: string;
  debugId?: string;
  debug_id?: string;
}

export function inspectSourceMap(content: Buffer | string): InspectedMap {
  const size = typeof content === 'string' ? Buffer.byteLength(content) : content.length;
  if (size > LIMITS.sourceMaps.mapBytes) return refuse('map_too_large', `${size} bytes, more than ${LIMITS.sourceMaps.mapBytes}`);
  let parsed: unknown;
  try {
    // A byte-order mark and the `)]}'` guard some servers prepend (the source map spec allows it) are skipped.
    parsed = JSON.parse(stripPrefix(typeof content === 'string' ? content : content.toString('utf8')));
  } catch (err) {
    return refuse('map_invalid_json', (err as Error).message.slice(0, 200));
  }
  if (!isObject(parsed) || parsed.version !== 3) return refuse('not_a_source_map', 'not a JSON object with "version": 3');
  const sections = { count: 0 };
  const shape = checkShape(parsed, 0, sections);
  if (shape) return shape;
  const debugId = normalizeDebugId(parsed.debugId) ?? normalizeDebugId(parsed.debug_id);
  return { kind: 'ok', debugId, map: parsed as unknown as RawSourceMap };
}

function checkShape(map: Record<string, unknown>, depth: number, sections: { count: number }): InspectedMap | undefined {
  if (Array.isArray(map.sections)) {
    if (depth >= LIMITS.sourceMaps.sectionDepth) return refuse('map_sections_too_deep', `sections nested more than ${LIMITS.sourceMaps.sectionDepth} deep`);
    for (const s of map.sections) {
      if (++sections.count > LIMITS.sourceMaps.sections) return refuse('map_too_many_sections', `more than ${LIMITS.sourceMaps.sections} sections`);
      if (!isObject(s) || !isObject(s.offset) || !isObject(s.map)) return refuse('not_a_source_map', 'a section without an offset and a map');
      const inner = checkShape(s.map, depth + 1, sections);
      if (inner) return inner;
    }
    return undefined;
  }
  if (typeof map.mappings !== 'string') return refuse('not_a_source_map', 'no "mappings" string and no "sections"');
  // Base64 VLQ digits, commas and semicolons only: anything else is no mapping (a decoder would read garbage from it).
  if (/[^A-Za-z0-9+/,;]/.test(map.mappings)) return refuse('map_invalid_mappings', '"mappings" holds characters that are not base64 VLQ');
  if (!Array.isArray(map.sources) || !map.sources.every((x) => typeof x === 'string' || x === null))
    return refuse('not_a_source_map', '"sources" is not a list of strings');
  if (map.names !== undefined && (!Array.isArray(map.names) || !map.names.every((x) => typeof x === 'string')))
    return refuse('not_a_source_map', '"names" is not a list of strings');
  if (map.sourcesContent !== undefined && (!Array.isArray(map.sourcesContent) || !map.sourcesContent.every((x) => typeof x === 'string' || x === null)))
    return refuse('not_a_source_map', '"sourcesContent" is not a list of strings');
  return undefined;
}

function stripPrefix(text: string): string {
  let t = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  if (t.startsWith(")]}'")) t = t.slice(t.indexOf('\n') + 1);
  return t;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const refuse = (reason: MapRefusal, detail: string): InspectedMap => ({ kind: 'refused', reason, detail });
