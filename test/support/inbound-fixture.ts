import { randomUUID } from 'node:crypto';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import { buildTestApi, signUpAndSignIn } from './accounts.ts';
import type { TestPlatformOptions } from './platform.ts';

/**
 * The API with the provider secrets in `env`, a signed-in owner, and the inbound pipeline on a topic and group of this
 * run's own (runs sharing one Kafka cluster never take each other's deliveries).
 */
export async function startInboundFixture(opts: TestPlatformOptions, env: Record<string, string>) {
  const suffix = randomUUID().slice(0, 8);
  const t = await buildTestApi({ ...opts, env: { ...opts.env, ...env }, topics: { inbound: `inbound-${suffix}` } });
  const owner = await signUpAndSignIn(t.app, t.platform, { email: `owner-${suffix}@example.test` });
  const consumer = await startInboundConsumer(t.platform, { topic: `inbound-${suffix}`, consumerGroup: `inbound-${suffix}` });
  return {
    t,
    owner,
    consumer,
    suffix,
    async close() {
      await consumer.stop();
      await t.close();
    },
  };
}
