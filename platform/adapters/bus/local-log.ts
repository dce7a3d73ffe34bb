import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import type { BusMessage } from '../../ports/bus.ts';

/**
 * The embedded bus's log on disk (issue 29): what lets the in-process bus answer a publish once the messages are
 * written and synced, instead of once they are processed, so the edge's 202 waits for an append and not for the
 * error pipeline. One directory per topic under the bus directory (DATA_DIR/bus/<topic>/):
 *
 *  - segments     `<base offset, 20 digits>.log`, append only. A record is framed
 *                 [u32 body length][u32 crc32 of body][body], body = [u16 key length, 0xffff: no key][key][value];
 *                 a record's offset is its segment's base plus its position. A segment rolls at SEGMENT_BYTES.
 *  - appends      group-committed: appends that arrive while a write + fdatasync runs go out together in the next
 *                 one, and each resolves with the write that carried it. A failed write (a full disk: ENOSPC) is cut
 *                 back off the file (ftruncate to the last synced size) and rejects its appends; if the cut fails
 *                 too, the log refuses every append until the process restarts rather than write after a torn record.
 *                 A segment that cannot be created when it should roll (no space for it) is reported, and the
 *                 appends go on into the current one until a roll succeeds.
 *  - commits      a consumer group's next offset to process, `<group>.offset`, replaced by write + rename. Not
 *                 synced: a commit lost in a crash means re-delivery, which every handler tolerates (at least once).
 *  - recovery     at open, every segment is read in order; a torn or corrupt record (a crash mid-write) ends its
 *                 segment there, and the last segment is truncated to it.
 *  - reading      (recovery, and a group reading back what it has not committed) READ_CHUNK_BYTES at a time with
 *                 async reads, so a restart never holds the event loop for a whole segment (64 MB) while the
 *                 process's other roles serve.
 *  - retention    a segment other than the last is deleted once every group of the topic (those subscribed and
 *                 those with a commit file) has committed past its end.
 *  - snapshot     (backups) the segments up to the last synced record and the groups' commits as they are at the
 *                 call; appends and commits go on meanwhile and are not in the copy.
 *
 * File names of topics and groups are percent-encoded, so no name leaves the bus directory.
 */
export const SEGMENT_BYTES = 64 * 1024 * 1024;
/** Bytes a segment is read in at a time (a record longer than this is read whole). */
export const READ_CHUNK_BYTES = 1024 * 1024;
const HEADER = 8;
const NO_KEY = 0xffff;
/** Longest key a record can carry (u16 length, 0xffff reserved). */
const MAX_KEY_BYTES = 0xfffe;

const write = promisify(fs.write);
const fdatasync = promisify(fs.fdatasync);
const ftruncate = promisify(fs.ftruncate);

export interface LogRecord {
  offset: bigint;
  key?: string;
  value: Buffer;
}

interface Segment {
  base: bigint;
  /** Records in it. */
  count: number;
  file: string;
}

type OnRecords = (records: LogRecord[]) => void;

interface PendingAppend {
  frames: Buffer;
  count: number;
  resolve(first: bigint): void;
  reject(err: unknown): void;
}

export interface TopicLog {
  /** The offset the next appended record gets. */
  readonly nextOffset: bigint;
  /** The first offset still on disk. */
  readonly startOffset: bigint;
  /** Write and sync the messages; resolves with the first one's offset (the rest follow in order). */
  append(messages: BusMessage[]): Promise<bigint>;
  /**
   * Read the records from `from` up to the last one synced at this call (nextOffset then) from disk, handing them to
   * `onRecords` in order, a chunk's worth at a time; resolves once all were handed over.
   */
  readFrom(from: bigint, onRecords: OnRecords): Promise<void>;
  /** The group's committed next offset, or undefined when it never committed. */
  committed(group: string): bigint | undefined;
  /** Record that `group` processed everything before `next`; deletes segments every group is past. */
  commit(group: string, next: bigint): void;
  /**
   * Copy the log into `dest` (created) as it is at this call: every segment up to its last synced record (so the
   * copy never ends in a torn one) and each group's commit. Appends, commits and retention go on meanwhile.
   */
  snapshot(dest: string): Promise<void>;
  /** Resolves when the appends and commits started so far are done; then closes the file. */
  close(): Promise<void>;
}

const fileName = (name: string) => encodeURIComponent(name).replace(/\./g, '%2E');

/** Frames for the messages, one buffer. */
function encode(messages: BusMessage[]): Buffer {
  const keys = messages.map((m) => (m.key === undefined ? undefined : Buffer.from(m.key)));
  let total = 0;
  messages.forEach((m, i) => {
    const key = keys[i];
    if (key && key.length > MAX_KEY_BYTES) throw new RangeError(`bus key longer than ${MAX_KEY_BYTES} bytes`);
    total += HEADER + 2 + (key?.length ?? 0) + m.value.length;
  });
  const out = Buffer.allocUnsafe(total);
  let at = 0;
  messages.forEach((m, i) => {
    const key = keys[i];
    const bodyStart = at + HEADER;
    out.writeUInt16BE(key ? key.length : NO_KEY, bodyStart);
    let p = bodyStart + 2;
    if (key) p += key.copy(out, p);
    p += m.value.copy(out, p);
    out.writeUInt32BE(p - bodyStart, at);
    out.writeUInt32BE(crc32(out.subarray(bodyStart, p)), at + 4);
    at = p;
  });
  return out;
}

/**
 * The whole records at the start of `buf` (records of a segment from offset `base` on): how many there are, the bytes
 * they fill, copies of those whose offsets `keep` accepts (at most `limit` records read), and, when decoding stopped
 * before `buf`'s end, whether at a corrupt record or at one `buf` holds only part of (`need`: the bytes, from the
 * valid length on, that the next read must bring for it).
 */
function decode(
  buf: Buffer,
  base: bigint,
  keep?: (offset: bigint) => boolean,
  limit = Number.POSITIVE_INFINITY,
): { count: number; records: LogRecord[]; validBytes: number; corrupt: boolean; need: number } {
  const records: LogRecord[] = [];
  let count = 0;
  let at = 0;
  let corrupt = false;
  let need = HEADER;
  while (count < limit) {
    if (at + HEADER > buf.length) break;
    const len = buf.readUInt32BE(at);
    const end = at + HEADER + len;
    if (len < 2) {
      corrupt = true;
      break;
    }
    if (end > buf.length) {
      need = HEADER + len;
      break;
    }
    const body = buf.subarray(at + HEADER, end);
    const keyLen = body.readUInt16BE(0);
    const hasKey = keyLen !== NO_KEY;
    if (crc32(body) !== buf.readUInt32BE(at + 4) || (hasKey && 2 + keyLen > body.length)) {
      corrupt = true;
      break;
    }
    const offset = base + BigInt(count);
    if (keep?.(offset)) {
      records.push({
        offset,
        key: hasKey ? body.toString('utf8', 2, 2 + keyLen) : undefined,
        // A copy: the segment's buffer is dropped after reading.
        value: Buffer.from(body.subarray(hasKey ? 2 + keyLen : 2)),
      });
    }
    count++;
    at = end;
  }
  return { count, records, validBytes: at, corrupt, need };
}

/**
 * The whole records of a segment file, read READ_CHUNK_BYTES at a time with async reads, so the event loop turns
 * between chunks (a record longer than a chunk is read whole). Hands the records whose offsets `keep` accepts to
 * `onRecords`, chunk by chunk; reads at most `limit` records. Resolves with how many records there are, how many
 * bytes they fill (where the first torn or corrupt one starts) and the file's size.
 */
async function scanSegment(
  file: string,
  base: bigint,
  opts: { limit?: number; keep?: (offset: bigint) => boolean; onRecords?: OnRecords } = {},
): Promise<{ count: number; validBytes: number; fileBytes: number }> {
  const limit = opts.limit ?? Number.POSITIVE_INFINITY;
  const handle = await fs.promises.open(file, 'r');
  try {
    const fileBytes = (await handle.stat()).size;
    let count = 0;
    /** File position of `buf`'s first byte: the end of the whole records decoded so far. */
    let at = 0;
    let buf = Buffer.alloc(0);
    for (;;) {
      const got = decode(buf, base + BigInt(count), opts.keep, limit - count);
      count += got.count;
      at += got.validBytes;
      buf = buf.subarray(got.validBytes);
      if (got.records.length) opts.onRecords?.(got.records);
      // Done: enough records, a corrupt one, or a record the file ends within (torn).
      if (count >= limit || got.corrupt || at + got.need > fileBytes) break;
      const want = Math.min(Math.max(READ_CHUNK_BYTES, got.need - buf.length), fileBytes - at - buf.length);
      const next = Buffer.allocUnsafe(buf.length + want);
      buf.copy(next);
      const { bytesRead } = await handle.read(next, buf.length, want, at + buf.length);
      if (!bytesRead) break;
      buf = next.subarray(0, buf.length + bytesRead);
    }
    return { count, validBytes: at, fileBytes };
  } finally {
    await handle.close();
  }
}

/** Open (recovering) the log of one topic in `dir`; it runs when a topic is first used. */
export async function openTopicLog(dir: string, onError: (err: unknown, what: string) => void, segmentBytes = SEGMENT_BYTES): Promise<TopicLog> {
  await fs.promises.mkdir(dir, { recursive: true });
  const segments: Segment[] = [];
  const commits = new Map<string, bigint>();
  for (const f of (await fs.promises.readdir(dir)).sort()) {
    const seg = /^(\d{20})\.log$/.exec(f);
    // Sorted by name is sorted by base offset: the names are zero-padded to one width.
    if (seg) segments.push({ base: BigInt(seg[1]!), count: 0, file: path.join(dir, f) });
    else if (f.endsWith('.offset')) {
      const text = (await fs.promises.readFile(path.join(dir, f), 'utf8')).trim();
      if (/^\d+$/.test(text)) commits.set(decodeURIComponent(f.slice(0, -'.offset'.length)), BigInt(text));
    }
  }
  for (const [i, s] of segments.entries()) {
    const { count, validBytes, fileBytes } = await scanSegment(s.file, s.base);
    s.count = count;
    if (validBytes < fileBytes) {
      // The last segment's tail is a write the crash cut short: cut it off. Anywhere else the disk lost synced records.
      if (i === segments.length - 1) await fs.promises.truncate(s.file, validBytes);
      else onError(new Error(`${fileBytes - validBytes} bytes after record ${s.base + BigInt(count)} cannot be read`), `reading ${s.file}`);
    }
  }
  const segmentFile = (base: bigint) => path.join(dir, `${base.toString().padStart(20, '0')}.log`);
  if (!segments.length) segments.push({ base: 0n, count: 0, file: segmentFile(0n) });
  let active = segments[segments.length - 1]!;
  let fd = fs.openSync(active.file, 'a');
  let size = fs.fstatSync(fd).size;
  const endOf = (s: Segment) => s.base + BigInt(s.count);

  let queue: PendingAppend[] = [];
  let flushing: Promise<void> | undefined;
  let broken: Error | undefined;
  /** Per group: the commit still to write, and the write running (at most one; it writes the newest value). */
  const commitWrites = new Map<string, { next?: bigint; writing?: Promise<void> }>();

  async function flush(): Promise<void> {
    while (queue.length) {
      const batch = queue;
      queue = [];
      const frames = batch.length === 1 ? batch[0]!.frames : Buffer.concat(batch.map((p) => p.frames));
      const count = batch.reduce((n, p) => n + p.count, 0);
      try {
        if (broken) throw broken;
        let written = 0;
        while (written < frames.length) written += (await write(fd, frames, written, frames.length - written, null)).bytesWritten;
        await fdatasync(fd);
      } catch (err) {
        if (!broken) {
          await ftruncate(fd, size).catch((cut) => {
            broken = new Error(`bus log ${dir} cannot be cut back after a failed write: ${(cut as Error).message}`);
          });
        }
        for (const p of batch) p.reject(err);
        continue;
      }
      let first = endOf(active);
      size += frames.length;
      for (const p of batch) {
        p.resolve(first);
        first += BigInt(p.count);
      }
      active.count += count;
      if (size >= segmentBytes) {
        try {
          roll();
        } catch (err) {
          onError(err, `starting a segment after ${endOf(active)}`);
        }
      }
    }
  }

  /**
   * One flush at a time. An append made while a flush is ending (after its loop found the queue empty, before its
   * promise settled: a caller appending as soon as its previous append resolved) is picked up by the next one.
   */
  function startFlush(): void {
    flushing = flush().finally(() => {
      flushing = undefined;
      if (queue.length) startFlush();
    });
  }

  function roll(): void {
    const base = endOf(active);
    const next = { base, count: 0, file: segmentFile(base) };
    const nextFd = fs.openSync(next.file, 'a');
    fs.closeSync(fd);
    fd = nextFd;
    size = 0;
    segments.push(next);
    active = next;
  }

  function prune(): void {
    if (!commits.size) return;
    let low: bigint | undefined;
    for (const c of commits.values()) if (low === undefined || c < low) low = c;
    while (segments.length > 1 && endOf(segments[0]!) <= low!) {
      const gone = segments.shift()!;
      fs.promises.unlink(gone.file).catch((err) => onError(err, `deleting ${gone.file}`));
    }
  }

  return {
    get nextOffset() {
      return endOf(active);
    },
    get startOffset() {
      return segments[0]!.base;
    },
    append(messages) {
      return new Promise<bigint>((resolve, reject) => {
        queue.push({ frames: encode(messages), count: messages.length, resolve, reject });
        if (!flushing) startFlush();
      });
    },
    async readFrom(from, onRecords) {
      // What there is at this call, taken before any await: records appended meanwhile are not read.
      const taken = segments.filter((s) => endOf(s) > from && s.count).map((s) => ({ ...s }));
      for (const s of taken) await scanSegment(s.file, s.base, { limit: s.count, keep: (offset) => offset >= from, onRecords });
    },
    committed: (group) => commits.get(group),
    commit(group, next) {
      commits.set(group, next);
      prune();
      let w = commitWrites.get(group);
      if (!w) commitWrites.set(group, (w = {}));
      w.next = next;
      if (w.writing !== undefined) return;
      const state = w;
      state.writing = (async () => {
        const file = path.join(dir, `${fileName(group)}.offset`);
        while (state.next !== undefined) {
          const value = state.next;
          state.next = undefined;
          try {
            await fs.promises.writeFile(`${file}.tmp`, value.toString());
            await fs.promises.rename(`${file}.tmp`, file);
          } catch (err) {
            onError(err, `committing ${group}`);
          }
        }
        state.writing = undefined;
      })();
    },
    snapshot(dest) {
      // Taken in this call, before any await: the synced length of the active segment (bytes past it are a write
      // not yet acknowledged), the others whole, each held open so that retention deleting one cannot take it from
      // under the copy; and the commits, which never run ahead of what the stores hold.
      const taken = segments.map((s) => ({ name: path.basename(s.file), fd: fs.openSync(s.file, 'r'), bytes: s === active ? size : undefined }));
      const groups = [...commits];
      return (async () => {
        try {
          await fs.promises.mkdir(dest, { recursive: true });
          for (const t of taken) {
            const bytes = t.bytes ?? fs.fstatSync(t.fd).size;
            const to = path.join(dest, t.name);
            if (!bytes) await fs.promises.writeFile(to, '');
            else await pipeline(fs.createReadStream('', { fd: t.fd, start: 0, end: bytes - 1, autoClose: false }), fs.createWriteStream(to));
          }
          for (const [group, next] of groups) await fs.promises.writeFile(path.join(dest, `${fileName(group)}.offset`), next.toString());
        } finally {
          for (const t of taken) fs.closeSync(t.fd);
        }
      })();
    },
    async close() {
      while (flushing !== undefined) await flushing;
      await Promise.all([...commitWrites.values()].map((w) => w.writing));
      fs.closeSync(fd);
    },
  };
}

/** The bus directory: a topic's log in its own sub-directory, opened when first used. */
export function topicLogDir(busDir: string, topic: string): string {
  return path.join(busDir, fileName(topic));
}
