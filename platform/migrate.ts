import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { RelationalStore } from './ports/relational-store.ts';
import type { AnalyticalStore } from './ports/analytical-store.ts';
import type { Logger } from './logger.ts';
import { fromSourceRoot } from './source-root.ts';

/**
 * Versioned migrations, applied at start. Relational: files platform/migrations/relational/NNNN_*.sql,
 * recorded in schema_migrations, applied under a transaction-scoped advisory lock so two processes
 * starting at once apply each version exactly once. Analytical: platform/migrations/analytical/NNNN_*.sql,
 * written idempotently (IF NOT EXISTS) and recorded in a schema_migrations table of their own.
 */
const here = fromSourceRoot('platform');
const MIGRATION_LOCK = 727_001;

async function migrationFiles(kind: 'relational' | 'analytical'): Promise<Array<{ version: string; sql: string }>> {
  const dir = path.join(here, 'migrations', kind);
  const names = (await readdir(dir)).filter((n) => /^\d{4}_.+\.sql$/.test(n)).sort();
  return Promise.all(names.map(async (n) => ({ version: n.replace(/\.sql$/, ''), sql: await readFile(path.join(dir, n), 'utf8') })));
}

export async function migrateRelational(db: RelationalStore, logger?: Logger): Promise<string[]> {
  const files = await migrationFiles('relational');
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())', []);
    const done = new Set((await tx.query<{ version: string }>('SELECT version FROM schema_migrations', [])).rows.map((r) => r.version));
    const applied: string[] = [];
    for (const f of files) {
      if (done.has(f.version)) continue;
      for (const stmt of splitStatements(f.sql)) await tx.query(stmt, []);
      await tx.query('INSERT INTO schema_migrations (version) VALUES ($1)', [f.version]);
      applied.push(f.version);
    }
    if (applied.length) logger?.info({ applied }, 'relational migrations applied');
    return applied;
  });
}

export async function migrateAnalytical(ch: AnalyticalStore, logger?: Logger): Promise<string[]> {
  const files = await migrationFiles('analytical');
  await ch.command(
    'CREATE TABLE IF NOT EXISTS schema_migrations (version String, applied_at DateTime64(3) DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY version',
  );
  const done = new Set((await ch.query<{ version: string }>('SELECT version FROM schema_migrations FINAL')).map((r) => r.version));
  const applied: string[] = [];
  for (const f of files) {
    if (done.has(f.version)) continue;
    // Every analytical statement is idempotent (IF NOT EXISTS), so a concurrent start is harmless.
    for (const stmt of splitStatements(f.sql)) await ch.command(stmt);
    await ch.insert('schema_migrations', [{ version: f.version }]);
    applied.push(f.version);
  }
  if (applied.length) logger?.info({ applied }, 'analytical migrations applied');
  return applied;
}

/** Split a migration file on semicolons at line ends; migrations keep to one statement per `;\n`. */
export function splitStatements(sql: string): string[] {
  return sql
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.replace(/^\s*--.*$/gm, '').trim())
    .filter(Boolean);
}
