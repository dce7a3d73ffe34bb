import { randomUUID } from 'node:crypto';
import { startInboundConsumer } from '../../processor/inbound/inbound-consumer.ts';
import { buildTestApi, signUpAndSignIn } from './accounts.ts';
import type { TestPlatformOptions } from './platform.ts';

/**
 * The API with the provider secrets in `env`, a signed-in owner, and the inbound pipeline on bus names of this run's own
 * (BUS_NAME_SUFFIX: runs sharing one Kafka cluster never take each other's deliveries).
 */
export async function startInboundFixture(opts: TestPlatformOptions, env: Record<string, string>) {
  const suffix = randomUUID().slice(0, 8);
  const t = await buildTestApi({ ...opts, env: { ...opts.env, ...env, BUS_NAME_SUFFIX: `.inbound-${suffix}` } });
  const owner = await signUpAndSignIn(t.app, t.platform, { email: `owner-${suffix}@example.test` });
  const consumer = await startInboundConsumer(t.platform);
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
