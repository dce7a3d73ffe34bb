/** Messages between pglite-worker-store.ts (the main thread) and pglite-worker.ts (PGlite's thread). */
export type WorkerRequest =
  | { id: number; op: 'query'; sql: string; params?: unknown[]; tx?: number }
  | { id: number; op: 'begin'; tx?: undefined }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'close'; tx?: undefined }
  /** Copy the database's files into `dest` between statements (a backup). */
  | { id: number; op: 'snapshot'; dest: string; tx?: undefined };

/** Every request gets one reply with its id; id 0 says the worker is ready (or could not open the database). */
export type WorkerReply =
  | { id: number; ok: true; rows: unknown[]; affectedRows: number }
  | { id: number; ok: false; error: { message: string; name: string; fields: Record<string, unknown> } };
