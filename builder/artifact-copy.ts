import { constants, createWriteStream } from 'node:fs';
import { lstat, mkdir, open, readdir, realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { ArtifactLimits } from '../schemas/deploys.ts';

/**
 * The output directory becomes the deploy's artifact: regular files and directories only, all inside the output.
 *   1. the output directory is resolved with realpath and must be the checkout or inside it (an output that is a
 *      link to `/` fails with output_escapes)
 *   2. a walk without recursion and without following links: directories are made, regular files copied (opened
 *      with O_NOFOLLOW), `.git` skipped
 *   3. a link is followed only to see where it ends: inside the output and at a regular file, its content is
 *      copied as a file; at a directory inside the output, it is dropped with a log line (a link loop cannot
 *      multiply the artifact); anywhere outside the output, the build fails with output_escapes naming it
 *   4. anything else (sockets, fifos, devices) is dropped with a log line
 *   5. limits: entry count (files and directories), single file size, total bytes; each failure names the limit
 *   6. room: what the project and account may still keep and what DATA_DIR's disk can spare (output-quota.ts), read
 *      once the build is done; the output is charged at its apparent size (`stat.size`: a sparse file counts as its
 *      length, as it takes that much once copied), a directory at DIR_BYTES, each checked before it is written, so
 *      an output past the room ends with nothing more of it written
 * The build's processes are gone by now (the sandbox's PID namespace ended), so nothing changes under the walk.
 */
export type ArtifactFailure = 'output_missing' | 'output_escapes' | 'too_many_files' | 'file_too_large' | 'artifact_too_large' | 'quota_exceeded' | 'disk_full';
export type ArtifactOutcome = { ok: true; files: number; bytes: number } | { ok: false; reason: ArtifactFailure; message: string };

export interface CopyArtifactOptions {
  /** The checkout, on the host. */
  checkout: string;
  /** The project's output directory, relative to the checkout, as configured. */
  outputDir: string;
  dest: string;
  limits: ArtifactLimits;
  /** A line in the build log (what was dropped). */
  note(text: string): void;
  /** The room the output may take (output-quota.ts), asked once the build is done; none: the artifact limits only. */
  room?: () => Promise<OutputRoom | undefined>;
}

/** Bytes an output may take beyond which the copy ends with `reason`, and the log line that says so. */
export interface OutputRoom {
  maxBytes: number;
  reason: 'quota_exceeded' | 'disk_full';
  message(bytes: number): string;
}

/** What a directory of the output is charged (a block: an empty directory takes one). */
export const DIR_BYTES = 4096;

const inside = (root: string, p: string) => p === root || p.startsWith(root + path.sep);

export async function copyArtifact(o: CopyArtifactOptions): Promise<ArtifactOutcome> {
  // 1. the output directory itself
  const checkout = await realpath(o.checkout);
  let root: string;
  try {
    root = await realpath(path.resolve(checkout, o.outputDir));
  } catch {
    return { ok: false, reason: 'output_missing', message: `output directory ${o.outputDir} does not exist after the build` };
  }
  if (!inside(checkout, root)) return { ok: false, reason: 'output_escapes', message: `output directory ${o.outputDir} resolves outside the checkout` };
  if (!(await lstat(root)).isDirectory()) return { ok: false, reason: 'output_missing', message: `output directory ${o.outputDir} is not a directory` };

  const budget = artifactBudget(o.limits, await o.room?.());
  const charge = budget.charge;
  await rm(o.dest, { recursive: true, force: true });
  await mkdir(o.dest, { recursive: true });
  let files = 0;

  async function copyFile(from: string, rel: string): Promise<ArtifactOutcome | undefined> {
    const handle = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const st = await handle.stat();
      if (!st.isFile()) return undefined;
      if (st.size > o.limits.maxFileBytes)
        return { ok: false, reason: 'file_too_large', message: `${rel} is ${st.size} bytes, over ${o.limits.maxFileBytes} (ARTIFACT_MAX_FILE_BYTES)` };
      const refused = charge(st.size);
      if (refused) return refused;
      files++;
      // Exactly st.size bytes: a file that grew since (it cannot, nothing of the build runs) is not read past it.
      await pipeline(
        handle.createReadStream({ start: 0, end: Math.max(0, st.size - 1), autoClose: false }),
        createWriteStream(path.join(o.dest, rel), { flags: 'wx', mode: 0o644 }),
      );
      return undefined;
    } finally {
      await handle.close();
    }
  }

  // 2-4. the walk
  const pending: string[] = [''];
  while (pending.length) {
    const dir = pending.pop()!;
    for (const entry of await readdir(path.join(root, dir), { withFileTypes: true })) {
      if (entry.name === '.git') continue;
      const rel = path.join(dir, entry.name);
      const full = path.join(root, rel);
      if (entry.isDirectory()) {
        const refused = charge(DIR_BYTES);
        if (refused) return refused;
        await mkdir(path.join(o.dest, rel));
        pending.push(rel);
      } else if (entry.isFile()) {
        const failed = await copyFile(full, rel);
        if (failed) return failed;
      } else if (entry.isSymbolicLink()) {
        const target = await realpath(full).catch(() => undefined);
        if (target === undefined) {
          o.note(`dropped ${rel}: a link to nothing`);
          continue;
        }
        if (!inside(root, target)) return { ok: false, reason: 'output_escapes', message: `${rel} is a link that leaves the output directory` };
        const st = await lstat(target);
        if (st.isFile()) {
          const failed = await copyFile(target, rel);
          if (failed) return failed;
        } else o.note(`dropped ${rel}: links to a directory (only files are followed)`);
      } else o.note(`dropped ${rel}: not a regular file`);
    }
  }
  return { ok: true, files, bytes: budget.bytes() };
}

/**
 * Step 5's count, shared with a prebuilt upload (artifact-upload.ts): each entry (file or directory) charged with its
 * bytes against the artifact limits and the room, or why it cannot be kept.
 */
export function artifactBudget(limits: ArtifactLimits, room: OutputRoom | undefined) {
  let entries = 0;
  let bytes = 0;
  return {
    bytes: () => bytes,
    charge(size: number): Extract<ArtifactOutcome, { ok: false }> | undefined {
      if (++entries > limits.maxFiles)
        return { ok: false, reason: 'too_many_files', message: `the output holds more than ${limits.maxFiles} files and directories (ARTIFACT_MAX_FILES)` };
      if (bytes + size > limits.maxBytes)
        return { ok: false, reason: 'artifact_too_large', message: `the output is over ${limits.maxBytes} bytes (ARTIFACT_MAX_BYTES)` };
      if (room && bytes + size > room.maxBytes) return { ok: false, reason: room.reason, message: room.message(bytes + size) };
      bytes += size;
      return undefined;
    },
  };
}
