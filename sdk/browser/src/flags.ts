import type { Identity } from './identity.ts';
import { fromService, type Transport } from './transport.ts';
import type { FlagAnswer } from './wire.ts';

/**
 * Feature flags for the visitor (identity.ts), loaded from the service when made and on `reload()` (identify does);
 * `isEnabled` and `getVariant` answer from the flags loaded (off until then, and what they were when a load fails);
 * `ready()` resolves once the current load is done.
 */
export interface FlagsClient {
  isEnabled(key: string): boolean;
  getVariant(key: string): string | null;
  getPayload(key: string): unknown;
  ready(): Promise<void>;
  reload(): Promise<void>;
}

export function createFlags(t: Transport, identity: Identity): FlagsClient {
  let flags: Record<string, FlagAnswer> = {};
  let load: Promise<void> = Promise.resolve();
  const reload = (): Promise<void> =>
    (load = fetch(`${t.base}flags/i?distinctId=${encodeURIComponent(identity.id)}`, { credentials: 'omit', headers: t.headers })
      .then((r) => (r.ok && fromService(t, r) ? r.json() : { flags }))
      .then((b: { flags?: Record<string, FlagAnswer> }) => void (flags = b.flags || flags))
      .catch(() => undefined));
  void reload();
  const on = (key: string): Partial<FlagAnswer> => (flags[key] && flags[key]!.enabled ? flags[key]! : { variant: null, payload: null });
  return {
    isEnabled: (key) => !!on(key).enabled,
    getVariant: (key) => on(key).variant!,
    getPayload: (key) => on(key).payload,
    ready: () => load,
    reload,
  };
}
