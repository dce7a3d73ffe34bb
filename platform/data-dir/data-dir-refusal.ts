import { DataDirDamagedError } from './damaged-data-dir.ts';
import { DataDirLockedError } from './data-dir-lock.ts';

/**
 * A data directory in use (exit 75, EX_TEMPFAIL: try again once the holder stops) or one that cannot be opened
 * (exit 74, EX_IOERR) is the operator's to act on: commands print its message alone, without a stack.
 */
export function dataDirRefusal(err: unknown): { message: string; exitCode: number } | undefined {
  if (err instanceof DataDirLockedError) return { message: err.message, exitCode: 75 };
  if (err instanceof DataDirDamagedError) return { message: err.message, exitCode: 74 };
  return undefined;
}
