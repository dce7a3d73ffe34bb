import { z } from 'zod';
import { TOPICS } from '../topics.ts';

/** "Build this queued deploy" (key deployId): the API publishes it when it queues a deploy; a builder picks it up. */
export const TOPIC = TOPICS.deployRequests;

export const DeployRequestedSchema = z.object({ v: z.literal(1), deployId: z.string(), projectId: z.string() });
export type DeployRequested = z.infer<typeof DeployRequestedSchema>;

export function encode(m: DeployRequested): Buffer {
  return Buffer.from(JSON.stringify(m));
}

export function decode(value: Buffer): DeployRequested | undefined {
  try {
    const r = DeployRequestedSchema.safeParse(JSON.parse(value.toString('utf8')));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}
