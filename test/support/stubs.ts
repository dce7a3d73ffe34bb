import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Mailer } from '../../platform/ports/mailer.ts';

/**
 * Inert stand-ins for ports a test does not look at: they take every call and keep nothing (no chDB to start, no
 * mail written). A test that reads what was stored or sent uses the real adapter or a recording one instead.
 */
export const inertAnalytics: AnalyticalStore = {
  adapter: 'chdb',
  command: async () => undefined,
  query: async () => [],
  insert: async () => undefined,
  close: async () => undefined,
};

export const inertMailer: Mailer = { adapter: 'file', send: async () => undefined, close: async () => undefined };
