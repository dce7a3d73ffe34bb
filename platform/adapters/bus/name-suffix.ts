import type { Bus } from '../../ports/bus.ts';

/**
 * The bus under BUS_NAME_SUFFIX (platform/config.ts), the one place a topic or consumer group name gets it: every name
 * this process publishes to, subscribes to or joins is the plain one (schemas/topics.ts) with the suffix appended, so
 * deployments (and test runs) sharing one Kafka cluster never meet. Callers name the plain topics and groups, and what
 * comes back (consumed messages, lag) names them plainly again. An empty suffix is the bus itself.
 */
export function withNameSuffix(bus: Bus, suffix: string): Bus {
  if (!suffix) return bus;
  const plain = (name: string) => (name.endsWith(suffix) ? name.slice(0, -suffix.length) : name);
  const lag = bus.lag;
  return {
    ...bus,
    publish: (topic, messages) => bus.publish(topic + suffix, messages),
    subscribe: (topic, groupId, handler, opts) =>
      bus.subscribe(topic + suffix, groupId + suffix, (messages) => handler(messages.map((m) => ({ ...m, topic: plain(m.topic) }))), opts),
    ...(lag && { lag: async () => (await lag.call(bus)).map((l) => ({ ...l, topic: plain(l.topic), group: plain(l.group) })) }),
  };
}
