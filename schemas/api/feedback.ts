import { z } from 'zod';
import { ENVIRONMENTS } from '../error-event.ts';
import { errorAnswers, pageOf, SlugParams } from './common.ts';
import { GroupParams } from './errors.ts';
import { routeShapes } from './route-shape.ts';

/**
 * User feedback (issue 40): what people sent through Sentry's feedback widget, `Sentry.captureFeedback` or a legacy
 * user report, scrubbed (processor/feedback/), listed per project and per issue, newest first.
 */
export const FeedbackSchema = z.object({
  id: z.string().describe("the feedback's id (Sentry's event id of the feedback)"),
  source: z.enum(['feedback', 'user_report']).describe('feedback: the widget or captureFeedback; user_report: the legacy user report'),
  eventId: z.string().nullable().describe('the error event it is about, as the SDK named it'),
  groupId: z
    .string()
    .nullable()
    .describe('the issue of that event, once this project stored the event (feedback may arrive first: it is linked as soon as the event is stored)'),
  environment: z.enum(ENVIRONMENTS).describe('stamped by the server (§7.4)'),
  name: z.string().nullable(),
  email: z.string().nullable().describe('as the reporter gave it, scrubbed by the same rules as error events'),
  message: z.string().describe('scrubbed'),
  url: z.string().nullable().describe('the page it was sent from (scrubbed)'),
  release: z.string().nullable().describe("the SDK's release"),
  clientTime: z.string().nullable().describe('when the SDK says it was sent'),
  receivedAt: z.string(),
});
export type Feedback = z.infer<typeof FeedbackSchema>;

export const FeedbackListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(25),
  cursor: z.string().max(512).optional(),
  environment: z.enum(ENVIRONMENTS).optional(),
});
export type FeedbackListQuery = z.infer<typeof FeedbackListQuery>;
export const FeedbackPage = pageOf(FeedbackSchema);
export type FeedbackPage = z.infer<typeof FeedbackPage>;

const tags = ['errors'];
const errors = errorAnswers(400, 404);

/** Reads need `errors:read` (or a session / CLI token that reaches the project), like the issues they link to. */
export const feedbackRoutes = routeShapes({
  listFeedback: {
    tags,
    summary: "The project's user feedback, newest first; paginated with cursor",
    description: 'Kept 90 days. Filter by `environment`.',
    params: SlugParams,
    querystring: FeedbackListQuery,
    response: { 200: FeedbackPage, ...errors },
  },
  listIssueFeedback: {
    tags,
    summary: "User feedback about an issue's events, newest first; paginated with cursor",
    params: GroupParams,
    querystring: FeedbackListQuery,
    response: { 200: FeedbackPage, ...errors },
  },
});
