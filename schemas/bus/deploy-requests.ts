import { z } from 'zod';
import { TOPICS } from '../topics.ts';
import { jsonCodec } from './json-codec.ts';

/** "Build this queued deploy" (key deployId): the API publishes it when it queues a deploy; a builder picks it up. */
export const TOPIC = TOPICS.deployRequests;

export const DeployRequestedSchema = z.object({ v: z.literal(1), deployId: z.string(), projectId: z.string() });
export type DeployRequested = z.infer<typeof DeployRequestedSchema>;

export const { encode, decode } = jsonCodec(DeployRequestedSchema);
