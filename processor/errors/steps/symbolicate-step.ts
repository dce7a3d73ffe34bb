import { sourceMapsRepository, type SourceMapRef } from '../../../domain/source-maps/source-maps-repository.ts';
import type { UnresolvedReason } from '../../../schemas/symbolicated-frame.ts';
import { scrubText } from '../../../domain/secret-scrub.ts';
import { yieldToEventLoop } from '../../../platform/event-loop.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import type { StampedErrorEvent } from '../../../schemas/error-event.ts';
import { parseFrameLine } from '../stack-parser.ts';
import { chooseMap, frameFile, type ChosenMap, type FrameFile, type ProjectMaps } from '../symbolication/map-choice.ts';
import { ParsedMaps, type ParsedMap } from '../symbolication/parsed-maps.ts';
import { symbolicateEvent, type FrameMap, type Symbolicated } from '../symbolication/symbolicate-event.ts';
import type { IncomingEvent } from './outcome.ts';

/**
 * Symbolication (issue 37), before the fingerprint: a batch's minified frames resolved through the project's kept
 * source maps (a deploy's, collected by the builder, or an upload's), so the identity and everything people
 * read name the original file and function. For a whole batch: one query for the candidate maps (by the frames'
 * served paths and debug ids), one for the projects' live deploys when a candidate is a deploy's, one for the content
 * of the maps not yet parsed; parsed maps are kept per processor (symbolication/parsed-maps.ts).
 *
 * A batch parses at most LIMITS.sourceMaps.coldBytesPerBatch of maps it has not seen: frames past it stay minified
 * (`busy`), so a tenant's many large maps stall the pipeline for a bounded time only. A batch with no frame that
 * could have a map (no http(s) file, no debug id) costs no query at all.
 *
 * What it did is counted (`counts`): frames resolved, frames unresolved by reason, maps refused by reason.
 */
export interface SymbolicationCounts {
  [key: string]: number;
}

export function createSymbolicateStep(deps: { db: Queryable; sitesDomain?: string; maps?: ParsedMaps; coldBytesPerBatch?: number }) {
  const sitesDomain = (deps.sitesDomain ?? 'localhost').toLowerCase();
  const parsed = deps.maps ?? new ParsedMaps(LIMITS.sourceMaps.cacheBytes);
  const coldBudget = deps.coldBytesPerBatch ?? LIMITS.sourceMaps.coldBytesPerBatch;
  const memo = new Map<string, Map<string, Symbolicated>>();
  const filesOfStack = new Map<string, Map<string, FrameFile>>();

  return async function symbolicateStep(events: IncomingEvent[], counts: SymbolicationCounts): Promise<IncomingEvent[]> {
    const count = (key: string, n = 1) => (counts[key] = (counts[key] ?? 0) + n);

    // 1. The files of the frames that could have a map.
    const files = new Map<IncomingEvent, Map<string, FrameFile>>();
    const projectIds = new Set<string>();
    const paths = new Set<string>();
    const debugIds = new Set<string>();
    for (const e of events) {
      const stack = e.event.stack;
      if (!stack || (!e.event.debugIds && !/https?:\/\//i.test(stack))) continue;
      // Without debug ids a stack's files depend on its text alone: the same stack again is a lookup.
      let byFile = e.event.debugIds ? undefined : filesOfStack.get(stack);
      if (byFile === undefined) {
        byFile = stackFiles(stack, e.event.debugIds);
        if (!e.event.debugIds) {
          if (filesOfStack.size >= MEMO_ENTRIES) filesOfStack.clear();
          filesOfStack.set(stack, byFile);
        }
      }
      if (!byFile.size) continue;
      files.set(e, byFile);
      projectIds.add(e.projectId);
      for (const f of byFile.values()) {
        if (f.servedPath !== undefined) paths.add(f.servedPath);
        if (f.debugId) debugIds.add(f.debugId);
      }
    }
    if (!files.size) return events;

    // 2. The candidate maps of the batch's projects, and their live deploys.
    const maps = await projectMaps(deps.db, [...projectIds], [...paths], [...debugIds]);
    if (!maps.size) {
      for (const byFile of files.values()) count('unresolved_no_map', byFile.size);
      return events;
    }

    // 3. Which map each frame file takes; the maps not parsed yet are read within the batch's budget.
    const chosen = new Map<IncomingEvent, Map<string, ChosenMap | undefined>>();
    const needed: SourceMapRef[] = [];
    const seen = new Set<string>();
    for (const [e, byFile] of files) {
      const m = new Map<string, ChosenMap | undefined>();
      for (const [file, f] of byFile) {
        const c = chooseMap(f, maps.get(e.projectId), e.event, sitesDomain);
        m.set(file, c);
        if (c && !parsed.has(c.ref.id) && !seen.has(c.ref.id)) {
          seen.add(c.ref.id);
          needed.push(c.ref);
        }
      }
      chosen.set(e, m);
    }
    const loaded = new Map<string, ParsedMap | 'busy'>();
    let budget = coldBudget;
    const affordable = needed.filter((r) => {
      if (r.size > budget) {
        loaded.set(r.id, 'busy');
        return false;
      }
      budget -= r.size;
      return true;
    });
    if (affordable.length) {
      const contents = await sourceMapsRepository.contents(
        deps.db,
        affordable.map((r) => r.id),
      );
      for (const r of affordable) {
        const content = contents.get(r.id);
        if (!content) continue;
        const map = parsed.add(r.id, content);
        if (map.kind === 'refused') count(`map_refused_${map.reason}`);
        loaded.set(r.id, map);
        // A parse is the one long step here: let the rest of the process breathe between maps.
        await yieldToEventLoop();
      }
    }

    // 4. Each event's frames through their maps. The same error thrown again has the same stack through the same
    // maps: its result is remembered (it is never changed after), and a repeat costs a lookup.
    return events.map((e) => {
      const m = chosen.get(e);
      if (!m) return e;
      let ids = '';
      let stable = true;
      for (const c of m.values()) {
        ids += c ? `${c.ref.id},` : '-,';
        if (c && loaded.get(c.ref.id) === 'busy') stable = false;
      }
      let s = stable ? memo.get(e.event.stack)?.get(ids) : undefined;
      if (!s) {
        const mapOf = (frame: { file: string }): FrameMap => {
          const c = m.get(frame.file);
          if (!c) return { unresolved: files.get(e)?.has(frame.file) ? 'no_map' : 'not_a_url' };
          const map = loaded.get(c.ref.id) ?? parsed.get(c.ref.id);
          // Swept between the choice and the read: as if there were none.
          return map ? { chosen: c, map } : { unresolved: 'no_map' };
        };
        // Context lines are the tenant's source: secrets in it are scrubbed like every other text an event stores.
        s = symbolicateEvent(e.event.stack, mapOf, scrubText) ?? NOTHING;
        if (stable) {
          if (memo.size >= MEMO_ENTRIES) memo.clear();
          let byMaps = memo.get(e.event.stack);
          if (!byMaps) memo.set(e.event.stack, (byMaps = new Map()));
          byMaps.set(ids, s);
        }
      }
      if (s === NOTHING) {
        count('unresolved_no_map', m.size);
        return e;
      }
      count('resolved', s.resolved);
      for (const [reason, n] of Object.entries(s.unresolved) as Array<[UnresolvedReason, number]>) count(`unresolved_${reason}`, n);
      if (!s.resolved) return withFrames(e, { ...e.event, frames: s.frames });
      return withFrames(e, { ...e.event, stack: s.stack, minifiedStack: s.minifiedStack, frames: s.frames });
    });
  };
}

/** The result of a stack whose frames had no map after all. */
const NOTHING: Symbolicated = { stack: '', minifiedStack: '', frames: [], resolved: 0, unresolved: {} };
/** Stacks remembered per processor (by their text and the maps chosen for them); cleared when full. */
const MEMO_ENTRIES = 5_000;

/** The files of a stack's first frames that could have a map: an http(s) URL, or a file with a debug id. */
function stackFiles(stack: string, debugIds: Record<string, string> | undefined): Map<string, FrameFile> {
  const byFile = new Map<string, FrameFile>();
  let n = 0;
  for (const line of stack.split('\n')) {
    const frame = parseFrameLine(line);
    if (!frame) continue;
    if (++n > LIMITS.sourceMaps.framesPerEvent) break;
    if (byFile.has(frame.file)) continue;
    const f = frameFile(frame.file, debugIds);
    if (f.servedPath !== undefined || f.debugId) byFile.set(frame.file, f);
  }
  return byFile;
}

function withFrames(e: IncomingEvent, event: StampedErrorEvent): IncomingEvent {
  return { projectId: e.projectId, originHost: e.originHost, receivedAt: e.receivedAt, event };
}

async function projectMaps(db: Queryable, projectIds: string[], paths: string[], debugIds: string[]): Promise<Map<string, ProjectMaps>> {
  const refs = await sourceMapsRepository.candidates(db, projectIds, paths, debugIds);
  const out = new Map<string, ProjectMaps>();
  let fromDeploys = false;
  for (const r of refs) {
    let p = out.get(r.projectId);
    if (!p) out.set(r.projectId, (p = { byPath: new Map(), byDebugId: new Map(), liveDeployId: null }));
    if (r.debugId && !p.byDebugId.has(r.debugId)) p.byDebugId.set(r.debugId, r);
    fromDeploys ||= r.deployId !== null;
    if (r.servedPath !== null) {
      const list = p.byPath.get(r.servedPath);
      if (list) {
        list.push(r);
      } else p.byPath.set(r.servedPath, [r]);
    }
  }
  // The live deploy served the production and custom-domain hosts' files: a frame resolved through its map says so.
  if (fromDeploys) for (const [id, live] of await sourceMapsRepository.liveDeploys(db, [...out.keys()])) if (out.has(id)) out.get(id)!.liveDeployId = live;
  return out;
}
