import { beforeAll, describe, expect, it } from 'vitest';
import { FeedbackItemSchema } from '../../../schemas/bus/client-items.ts';
import { payloadsOf, recordSdkEnvelopes, type SdkEnvelopes } from '../fixtures/sdk-envelopes.ts';
import { feedbackOfSentry } from './feedback.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});
const NOW = Date.UTC(2026, 10, 26, 12);
const newId = () => 'generated';

describe('a Sentry feedback item as feedback', () => {
  it("maps captureFeedback's event: its id and time, contexts.feedback's message, name, email, url and associated event", () => {
    const [raw] = payloadsOf(sdk.feedback, 'feedback') as Array<Record<string, unknown>>;
    const f = feedbackOfSentry(raw, NOW, newId)!;
    expect(f).toEqual({
      id: raw!.event_id,
      source: 'feedback',
      message: 'The checkout button does nothing',
      name: 'Ada',
      email: 'ada@example.com',
      url: 'https://app.example.com/cart',
      eventId: 'f'.repeat(32),
      timestamp: Math.round((raw!.timestamp as number) * 1000),
      release: 'abc1234',
      environment: 'production',
    });
    expect(FeedbackItemSchema.parse(f)).toEqual(f);
  });

  it('cuts the message, names an id when the event has none, and refuses an event without a feedback message', () => {
    const f = feedbackOfSentry({ contexts: { feedback: { message: 'm'.repeat(5000) } } }, NOW, newId)!;
    expect(f.message).toHaveLength(4096);
    expect(f).toMatchObject({ id: 'generated', timestamp: NOW });
    expect(feedbackOfSentry({ contexts: { feedback: { message: '' } } }, NOW, newId)).toBeUndefined();
    expect(feedbackOfSentry({ contexts: {} }, NOW, newId)).toBeUndefined();
    expect(feedbackOfSentry('x', NOW, newId)).toBeUndefined();
  });
});
