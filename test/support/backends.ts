import { describe, inject } from 'vitest';

export type BackendName = 'postgres' | 'redis' | 'kafka' | 'clickhouse';

/** The address of a real backend found by test/global-setup.ts, or undefined. */
export function backendUrl(name: BackendName): string | undefined {
  return inject('backends')[name];
}

/**
 * `describe` that needs real backends: it runs when they are present, is skipped locally when
 * one is missing, and fails in CI (where every backend must be present).
 */
export function describeWith(names: BackendName[], title: string, fn: () => void): void {
  const b = inject('backends');
  const missing = names.filter((n) => !b[n]);
  if (!missing.length) {
    describe(title, fn);
    return;
  }
  if (b.ci) {
    describe(title, () => {
      throw new Error(`missing backend(s) in CI: ${missing.join(', ')}`);
    });
    return;
  }
  describe.skip(`${title} (needs ${missing.join(', ')})`, fn);
}
