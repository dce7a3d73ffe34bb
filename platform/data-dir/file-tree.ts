/**
 * Walking and mirroring a part of the data directory for backups: never following a link (a link is recorded as a
 * link), never recursing (an explicit stack, so a deep tree of a tenant's artifact cannot exhaust the call stack),
 * and skipping what is not a file, a directory or a link (sockets, fifos: nothing to restore).
 */
import { constants } from 'node:fs';
import { copyFile, link, lstat, mkdir, readdir, readlink, symlink } from 'node:fs/promises';
import path from 'node:path';

export interface TreeEntry {
  /** Relative to the walked root, with `/` separators. */
  rel: string;
  kind: 'dir' | 'file' | 'symlink';
  /** Bytes of a regular file (0 for the others). */
  size: number;
}

/** Decides, from the relative path and the kind, that an entry (and, for a directory, all below it) is left out. */
export type SkipRule = (rel: string, kind: TreeEntry['kind']) => boolean;

/** Every entry below `root` (not `root` itself), parents before children, names sorted. */
export async function walkTree(root: string, skip: SkipRule = () => false): Promise<TreeEntry[]> {
  const out: TreeEntry[] = [];
  const pending: string[] = [''];
  while (pending.length) {
    const dir = pending.pop()!;
    const names = (await readdir(path.join(root, dir))).sort();
    const below: string[] = [];
    for (const name of names) {
      const rel = dir ? `${dir}/${name}` : name;
      const st = await lstat(path.join(root, rel)).catch((err: NodeJS.ErrnoException) => {
        // Gone between the listing and the look (a file some writer renamed away): it was never in the copy.
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (!st) continue;
      const kind = st.isDirectory() ? 'dir' : st.isFile() ? 'file' : st.isSymbolicLink() ? 'symlink' : undefined;
      if (!kind || skip(rel, kind)) continue;
      out.push({ rel, kind, size: kind === 'file' ? st.size : 0 });
      if (kind === 'dir') below.push(rel);
    }
    // Reversed onto the stack, so the walk visits directories in name order.
    for (let i = below.length - 1; i >= 0; i--) pending.push(below[i]!);
  }
  return out;
}

/**
 * Mirror `src` (a directory, or a single file or link) into `dst` (created): directories made, links made again as they are, regular files hard-linked
 * (`link`: the file is never changed in place afterwards, so the link is a copy that costs nothing) or copied
 * (`copy`: a file a writer may still change in place). A link across file systems falls back to a copy.
 */
export async function mirrorTree(src: string, dst: string, how: 'link' | 'copy', skip?: SkipRule): Promise<TreeEntry[]> {
  const top = await lstat(src);
  if (top.isSymbolicLink()) await symlink(await readlink(src), dst);
  if (top.isFile()) await placeFile(src, dst, how);
  if (!top.isDirectory()) return [];
  await mkdir(dst, { recursive: true });
  const entries = await walkTree(src, skip);
  for (const e of entries) {
    const from = path.join(src, e.rel);
    const to = path.join(dst, e.rel);
    if (e.kind === 'dir') await mkdir(to, { recursive: true });
    else if (e.kind === 'symlink') await symlink(await readlink(from), to);
    else await placeFile(from, to, how);
  }
  return entries;
}

async function placeFile(from: string, to: string, how: 'link' | 'copy'): Promise<void> {
  if (how === 'link') {
    try {
      await link(from, to);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return;
      if (code !== 'EXDEV' && code !== 'EPERM' && code !== 'EMLINK') throw err;
    }
  }
  // A clone where the file system can (btrfs, xfs), a plain copy elsewhere.
  await copyFile(from, to, constants.COPYFILE_FICLONE).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== 'ENOENT') throw err;
  });
}
