import { randomUUID } from 'node:crypto';

/** Topics and consumer groups of one run alone, so runs sharing a Kafka cluster never share them. */
export function isolatedTopics(label: string): {
  errorTopic: string;
  errorConsumerGroup: string;
  analyticsTopic: string;
  analyticsConsumerGroup: string;
  projectEventsTopic: string;
  webhookConsumerGroup: string;
  deployTopic: string;
  builderConsumerGroup: string;
  inboundTopic: string;
  inboundConsumerGroup: string;
} {
  const id = randomUUID();
  return {
    errorTopic: `errors.events.${label}.${id}`,
    errorConsumerGroup: `${label}-errors-${id}`,
    analyticsTopic: `analytics.events.${label}.${id}`,
    analyticsConsumerGroup: `${label}-analytics-${id}`,
    projectEventsTopic: `project.events.${label}.${id}`,
    webhookConsumerGroup: `${label}-webhooks-${id}`,
    deployTopic: `deploys.requested.${label}.${id}`,
    builderConsumerGroup: `${label}-builders-${id}`,
    inboundTopic: `inbound.events.${label}.${id}`,
    inboundConsumerGroup: `${label}-inbound-${id}`,
  };
}
