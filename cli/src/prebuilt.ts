import { createReadStream } from 'node:fs';
import { lstat, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { create } from 'tar';
import { RawBody } from './client.ts';
import type { Io } from './commands/command.ts';
import type { Out } from './output.ts';

/**
 * `cx deploy --prebuilt <dir>` (issue 42, "Deploy without git"): a built directory to the service as one .tar.gz
 * (`POST .../deploys/prebuilt`), which makes it a deploy through a build's artifact checks.
 *  1. survey  the directory walked without following links: a link, socket, fifo or device stops here, named (the
 *             service refuses the whole upload for one anyway); `.git` is left out, as the service would
 *  2. pack    with `tar` into a temporary .tar.gz, streamed to disk (never held in memory), portable headers
 *  3. send    the file streamed as the body, with a progress bar on a terminal (bytes sent of the file's size), plain
 *             lines otherwise; the temporary file removed whatever happens
 */
export interface Packed {
  file: string;
  /** The .tar.gz's bytes. */
  size: number;
  files: number;
  /** The files' own bytes. */
  bytes: number;
  remove(): Promise<void>;
}

const skipped = (rel: string) => rel.split(path.sep).includes('.git');

/** Files and bytes under `root`; throws naming the first entry an upload cannot hold. */
async function survey(root: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  const pending = [''];
  while (pending.length) {
    const dir = pending.pop()!;
    for (const entry of await readdir(path.join(root, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (skipped(rel)) continue;
      if (entry.isDirectory()) pending.push(rel);
      else if (entry.isFile()) {
        files++;
        bytes += (await lstat(path.join(root, rel))).size;
      } else {
        const what = entry.isSymbolicLink() ? 'a symbolic link' : 'not a regular file';
        throw new Error(
          `${path.join(path.basename(root), rel)} is ${what}: a prebuilt upload holds files and directories only (copy what it points to instead)`,
        );
      }
    }
  }
  return { files, bytes };
}

export async function packDir(dir: string): Promise<Packed> {
  const root = path.resolve(dir);
  if (!(await stat(root).catch(() => undefined))?.isDirectory()) throw new Error(`${dir} is not a directory`);
  const { files, bytes } = await survey(root);
  if (!files) throw new Error(`${dir} holds no files: build the site first`);
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cx-prebuilt-'));
  const remove = () => rm(tmp, { recursive: true, force: true });
  try {
    const file = path.join(tmp, 'site.tar.gz');
    await create({ gzip: true, cwd: root, file, portable: true, follow: false, filter: (p) => !skipped(path.normalize(p)) }, ['.']);
    return { file, size: (await stat(file)).size, files, bytes, remove };
  } catch (err) {
    await remove();
    throw err;
  }
}

const mb = (n: number) => `${(n / (1024 * 1024)).toFixed(1)} MB`;

/** The packed file as a streamed body, `onSent` told the bytes sent so far as they go. */
export function uploadBody(p: Packed, onSent: (sent: number) => void): RawBody {
  async function* bytes() {
    let sent = 0;
    for await (const chunk of createReadStream(p.file, { highWaterMark: 256 * 1024 })) {
      yield chunk as Buffer;
      sent += (chunk as Buffer).length;
      onSent(sent);
    }
  }
  return new RawBody('application/gzip', bytes(), p.size);
}

/** A progress bar on stderr when it is a terminal (and not --json); otherwise one line before and one after. */
export function uploadProgress(io: Io, out: Out, total: number) {
  const tty = !!io.stderr.isTTY && !out.json;
  const WIDTH = 30;
  let shown = -1;
  if (!tty && !out.json) out.note(`Uploading ${mb(total)}`);
  return {
    sent(n: number) {
      if (!tty) return;
      const pct = total ? Math.min(100, Math.floor((n * 100) / total)) : 100;
      if (pct === shown) return;
      shown = pct;
      const filled = Math.round((WIDTH * pct) / 100);
      io.stderr.write(`\r[${'#'.repeat(filled)}${'.'.repeat(WIDTH - filled)}] ${String(pct).padStart(3)}% ${mb(n)} / ${mb(total)}\u001b[K`);
    },
    /** The bar cleared; `ok`: the service took the upload. */
    done(ok: boolean) {
      if (tty) io.stderr.write('\r\u001b[K');
      if (ok && !out.json) out.note(`Uploaded ${mb(total)}`);
    },
  };
}
