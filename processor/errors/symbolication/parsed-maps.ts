import { AnyMap, originalPositionFor, sourceContentFor, type TraceMap } from '@jridgewell/trace-mapping';
import { inspectSourceMap, type MapRefusal } from '../../../domain/source-maps/source-map-file.ts';
import type { ContextLines } from '../../../schemas/symbolicated-frame.ts';

/**
 * Parsed source maps, kept per processor (issue 37): a map is read from the store and parsed once, then every frame
 * that names it is a binary search. Parsing is by `@jridgewell/trace-mapping` (the library Vite, Babel and Terser's
 * users trace with: it decodes `mappings` lazily and flattens index maps), never a VLQ decoder of our own; a map is
 * checked again before it is parsed (a stored row is still a tenant's file) and one that does not parse, or whose
 * mappings do not decode, is remembered as refused with its reason, so it costs its parse once.
 *
 * Bounded by bytes: an entry costs COST_PER_BYTE × the map's size (the decoded mappings, names and sources held
 * beside the text), and the least recently used go first once LIMITS.sourceMaps.cacheBytes is reached.
 */
export type ParsedMap =
  | { kind: 'ok'; trace: TraceMap; lines: Map<string, string[]>; contexts: Map<string, ContextLines> }
  | { kind: 'refused'; reason: MapRefusal | 'map_unreadable' };

/** Measured with bench/symbolication.bench.ts: a parsed and decoded map holds about this many times its bytes. */
export const COST_PER_BYTE = 4;

export interface OriginalPosition {
  source: string;
  line: number;
  /** 0-based, as source maps count columns. */
  column: number;
  name: string | null;
}

export class ParsedMaps {
  private readonly entries = new Map<string, { map: ParsedMap; cost: number }>();
  private bytes = 0;

  constructor(private readonly maxBytes: number) {}

  get size(): { entries: number; bytes: number } {
    return { entries: this.entries.size, bytes: this.bytes };
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  /** The parsed map, marked most recently used. */
  get(id: string): ParsedMap | undefined {
    const e = this.entries.get(id);
    if (!e) return undefined;
    this.entries.delete(id);
    this.entries.set(id, e);
    return e.map;
  }

  /** Parse `content` and keep it under `id`. */
  add(id: string, content: Buffer): ParsedMap {
    const map = parseMap(content);
    const cost = map.kind === 'ok' ? content.length * COST_PER_BYTE : 64;
    if (cost > this.maxBytes) return map;
    const old = this.entries.get(id);
    if (old) {
      this.bytes -= old.cost;
      this.entries.delete(id);
    }
    for (const [key, e] of this.entries) {
      if (this.bytes + cost <= this.maxBytes) break;
      this.entries.delete(key);
      this.bytes -= e.cost;
    }
    this.entries.set(id, { map, cost });
    this.bytes += cost;
    return map;
  }
}

export function parseMap(content: Buffer): ParsedMap {
  const inspected = inspectSourceMap(content);
  if (inspected.kind === 'refused') return { kind: 'refused', reason: inspected.reason };
  try {
    const trace = new AnyMap(inspected.map as never);
    // Decode now, so a map the library cannot read is refused here, once, not at every frame.
    originalPositionFor(trace, { line: 1, column: 0 });
    return { kind: 'ok', trace, lines: new Map(), contexts: new Map() };
  } catch {
    return { kind: 'refused', reason: 'map_unreadable' };
  }
}

/** The original position of a generated one (line 1-based, column 0-based), or undefined when the map has none. */
export function originalPosition(map: Extract<ParsedMap, { kind: 'ok' }>, line: number, column: number): OriginalPosition | undefined {
  let p: ReturnType<typeof originalPositionFor>;
  try {
    p = originalPositionFor(map.trace, { line, column });
  } catch {
    return undefined;
  }
  if (p.source == null || p.line == null || p.column == null || !Number.isFinite(p.line) || p.line < 1) return undefined;
  return { source: p.source, line: p.line, column: Math.max(0, p.column), name: typeof p.name === 'string' ? p.name : null };
}

/** The lines of a source's `sourcesContent`, split once per map and source; undefined when the map has none. */
export function sourceLines(map: Extract<ParsedMap, { kind: 'ok' }>, source: string): string[] | undefined {
  let lines = map.lines.get(source);
  if (lines === undefined) {
    const content = sourceContentFor(map.trace, source);
    if (typeof content !== 'string') return undefined;
    lines = content.split(/\r\n|\r|\n/);
    map.lines.set(source, lines);
  }
  return lines;
}
