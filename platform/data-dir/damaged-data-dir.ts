/**
 * An embedded engine that cannot open its files is named, with the way back: never a bare `RuntimeError: Aborted()`
 * from PGlite's WASM or a chDB exception, after which an operator cannot tell which of the data directory's parts
 * is at fault or what to do.
 */
import path from 'node:path';
import type { Backend } from '../config.ts';

export const EMBEDDED_ENGINE: Partial<Record<Backend, { name: string; sub: string }>> = {
  relational: { name: 'the embedded Postgres (PGlite)', sub: 'pglite' },
  analytical: { name: 'the embedded ClickHouse (chDB)', sub: 'chdb' },
  bus: { name: "the in-process bus's log", sub: 'bus' },
};

export class DataDirDamagedError extends Error {
  override readonly name = 'DataDirDamagedError';
  constructor(
    readonly backend: Backend,
    readonly where: string,
    override readonly cause: unknown,
  ) {
    const engine = EMBEDDED_ENGINE[backend]?.name ?? backend;
    const why = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    super(
      `${engine} could not open its files in ${where} (${why}). ` +
        'Nothing was changed. If the files are damaged (a crash of a version before the data directory was locked, ' +
        'two processes on one directory, a disk that filled), restore the last backup into an empty data directory: ' +
        '`npm run restore -- <backup file>` (README: Operating it, Backups and restore).',
    );
  }
}

/** Open an embedded engine; a failure becomes a DataDirDamagedError naming the engine and its folder. */
export async function openEmbedded<T>(backend: Backend, dataDir: string, make: () => Promise<T>): Promise<T> {
  try {
    return await make();
  } catch (err) {
    throw new DataDirDamagedError(backend, path.join(dataDir, EMBEDDED_ENGINE[backend]?.sub ?? ''), err);
  }
}
