import { z } from 'zod';

/**
 * A host pattern as project domains and `ingestOrigins` store it (matched by
 * domain/host-patterns.ts): a hostname of at most 253 characters, optionally `:port` (1-65535),
 * and, where `wildcard` allows it, a leading `*.`. Trimmed and lower-cased.
 */
const LABEL = '[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?';
const HOST = `(?=[^:]{1,253}(?::|$))${LABEL}(?:\\.${LABEL})*`;
const PORT = '(?::(\\d{1,5}))?';

export function hostPatternSchema(opts: { wildcard: boolean; message: string }) {
  const pattern = new RegExp(`^${opts.wildcard ? '(?:\\*\\.)?' : ''}${HOST}${PORT}$`);
  return z
    .string()
    .max(300)
    .trim()
    .toLowerCase()
    .refine((s) => {
      const m = pattern.exec(s);
      return m !== null && (m[1] === undefined || (Number(m[1]) >= 1 && Number(m[1]) <= 65535));
    }, opts.message);
}
