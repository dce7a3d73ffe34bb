import { z } from 'zod';
import { LIMITS } from './limits.ts';

/**
 * Error event, ingest input (spec §2.5). Over-long name/message/stack are cut, not refused
 * (the edge records which fields were cut in `truncated`). `environment` is accepted and ignored:
 * the server stamps it (§7.4).
 */
const optionalString = z.string().max(2048).optional();

export const ErrorEventSchema = z.object({
  name: z.string().optional(),
  message: z.string({ error: 'message is required and must be a string' }),
  stack: z.string().optional(),
  path: optionalString,
  distinctId: z.string().max(256).optional(),
  userId: z.string().max(256).optional(),
  sessionId: z.string().max(256).optional(),
  deployId: z.string().max(256).optional(),
  gitSha: z.string().max(64).optional(),
  environment: z.unknown().optional(),
  extra: z.record(z.string(), z.unknown()).optional(),
  /** Client time: epoch milliseconds or an ISO-8601 string (the spec leaves the format open). */
  timestamp: z.union([z.number().finite(), z.string().max(64)]).optional(),
  runtime: z.enum(['browser', 'node']).optional(),
});
export type ErrorEvent = z.infer<typeof ErrorEventSchema>;

export const ErrorBatchSchema = z.object({
  batch: z.array(ErrorEventSchema).min(LIMITS.errorBatch.minEvents).max(LIMITS.errorBatch.maxEvents),
});
export type ErrorBatch = z.infer<typeof ErrorBatchSchema>;

export const ENVIRONMENTS = ['production', 'preview', 'unknown'] as const;
export type Environment = (typeof ENVIRONMENTS)[number];

/** One event as the edge puts it on the bus: validated, cut to size, stamped. */
export interface StampedErrorEvent {
  eventId: string;
  name: string;
  message: string;
  stack: string;
  path?: string;
  distinctId?: string;
  userId?: string;
  sessionId?: string;
  deployId?: string;
  gitSha?: string;
  extra?: Record<string, unknown>;
  /** Client timestamp, normalised to epoch ms when it parses. */
  clientTime?: number;
  runtime: 'browser' | 'node';
  /** Fields the edge cut to their limit. */
  truncated: Array<'name' | 'message' | 'stack'>;
}

/** The bus message for one accepted batch (topic TOPICS.errorEvents, key projectId). */
export interface ErrorBatchMessage {
  v: 1;
  projectId: string;
  /** Host of the request's Origin header; null for server-to-server posts. */
  originHost: string | null;
  /** Epoch ms at the edge. */
  receivedAt: number;
  events: StampedErrorEvent[];
}
