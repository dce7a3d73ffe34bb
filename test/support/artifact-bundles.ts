import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { zipSync, type Zippable } from 'fflate';

/**
 * Artifact bundles as sentry-cli writes them (an 8-byte `SYSB` v2 header, then a ZIP with `manifest.json` and
 * `files/...`), made by hand for tests, and the multipart chunk bodies its upload sends.
 */
export interface BundleFile {
  type: 'source_map' | 'minified_source' | string;
  url: string;
  headers?: Record<string, string>;
  content: string | Uint8Array;
}

export const SYSB_HEADER = Buffer.from([0x53, 0x59, 0x53, 0x42, 0x02, 0x00, 0x00, 0x00]);

/** `files` keyed by entry name (`files/_/_/assets/x.js.map`); `manifest` replaces the manifest's bytes when given. */
export function makeBundle(files: Record<string, BundleFile>, opts: { sysb?: boolean; manifest?: string | Uint8Array; extra?: Zippable } = {}): Buffer {
  const manifest = {
    files: Object.fromEntries(Object.entries(files).map(([name, f]) => [name, { type: f.type, url: f.url, headers: f.headers ?? {} }])),
    org: 'acme',
    project: 'web',
  };
  const zippable: Zippable = {
    'manifest.json': typeof opts.manifest === 'string' ? Buffer.from(opts.manifest) : (opts.manifest ?? Buffer.from(JSON.stringify(manifest))),
    ...opts.extra,
  };
  for (const [name, f] of Object.entries(files)) zippable[name] = typeof f.content === 'string' ? Buffer.from(f.content) : f.content;
  // level 1: the tests' maps are filler (a zip bomb's 15 MB of spaces), and deflating them at 6 costs seconds
  const zip = Buffer.from(zipSync(zippable, { level: 1, mtime: new Date('1980-01-02T00:00:00Z') }));
  return opts.sysb === false ? zip : withSysbHeader(zip);
}

/**
 * The header before the ZIP, as symbolic's writer puts it: the ZIP is written after the 8 bytes, so its offsets count
 * from the start of the whole file (each local header's in the central directory, and the directory's own).
 */
export function withSysbHeader(zip: Buffer): Buffer {
  const out = Buffer.concat([SYSB_HEADER, zip]);
  const shift = SYSB_HEADER.length;
  const eocd = out.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  const entries = out.readUInt16LE(eocd + 10);
  const cd = out.readUInt32LE(eocd + 16) + shift;
  out.writeUInt32LE(cd, eocd + 16);
  let p = cd;
  for (let i = 0; i < entries; i++) {
    out.writeUInt32LE(out.readUInt32LE(p + 42) + shift, p + 42);
    p += 46 + out.readUInt16LE(p + 28) + out.readUInt16LE(p + 30) + out.readUInt16LE(p + 32);
  }
  return out;
}

/** A small valid map of a minified file, with a debug id when given. */
export function mapJson(opts: { debugId?: string; file?: string; source?: string } = {}): string {
  return JSON.stringify({
    version: 3,
    file: opts.file ?? 'main.js',
    sources: ['../src/lib.js'],
    sourcesContent: [opts.source ?? 'export function pay(x) {\n  throw new Error("payment failed");\n}\n'],
    names: ['pay'],
    mappings: 'AAAA,SAASA',
    ...(opts.debugId ? { debugId: opts.debugId } : {}),
  });
}

export const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');

/** A bundle cut as sentry-cli cuts it: chunk checksums in order and the whole bundle's. */
export function cut(blob: Buffer, chunkSize: number): { checksum: string; chunks: Array<{ checksum: string; bytes: Buffer }> } {
  const chunks: Array<{ checksum: string; bytes: Buffer }> = [];
  for (let off = 0; off < blob.length; off += chunkSize) {
    const bytes = blob.subarray(off, off + chunkSize);
    chunks.push({ checksum: sha1(bytes), bytes });
  }
  return { checksum: sha1(blob), chunks };
}

/** A multipart body as sentry-cli's curl writes it: one part per chunk, `file` (or gzip'd as `file_gzip`), filename = SHA-1. */
export function multipartChunks(
  parts: Array<{ name?: string; filename?: string; bytes: Uint8Array; gzip?: boolean }>,
  boundary = '------------------------sentrycli0123',
): {
  body: Buffer;
  contentType: string;
} {
  const pieces: Buffer[] = [];
  for (const p of parts) {
    const bytes = p.gzip ? gzipSync(p.bytes) : Buffer.from(p.bytes);
    const name = p.name ?? (p.gzip ? 'file_gzip' : 'file');
    pieces.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${p.filename ?? sha1(p.bytes)}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      ),
      bytes,
      Buffer.from('\r\n'),
    );
  }
  pieces.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(pieces), contentType: `multipart/form-data; boundary=${boundary}` };
}
