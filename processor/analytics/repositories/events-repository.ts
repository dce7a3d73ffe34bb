import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';

/** The analytics_events table's own settings (analytical migrations); its rows are inserted by steps/store-step.ts. */
export const analyticsEventsRepository = {
  /** The table's engine clause as ClickHouse shows it (with its TTL, if it has one). */
  async engine(analytics: AnalyticalStore): Promise<string | undefined> {
    const [table] = await analytics.query<{ engine_full: string }>(
      `SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'analytics_events'`,
    );
    return table?.engine_full;
  },

  /**
   * Rows expire `ttl` (a ClickHouse interval expression) after their event time. Existing parts are not rewritten at
   * once: ClickHouse drops expired rows as it merges.
   */
  async setTtl(analytics: AnalyticalStore, ttl: string): Promise<void> {
    await analytics.command(`ALTER TABLE analytics_events MODIFY TTL toDateTime(timestamp) + ${ttl} SETTINGS materialize_ttl_after_modify = 0`);
  },
};
