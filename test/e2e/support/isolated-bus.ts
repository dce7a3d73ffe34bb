import { randomUUID } from 'node:crypto';

/**
 * The BUS_NAME_SUFFIX of one run alone (platform/config.ts): runs sharing a Kafka cluster never share a topic or a
 * consumer group. Every role of the run is started on the same suffix, so they meet each other only.
 */
export function isolatedBus(label: string): { BUS_NAME_SUFFIX: string } {
  return { BUS_NAME_SUFFIX: `.${label}.${randomUUID()}` };
}
