import { beforeAll, describe, expect, it } from 'vitest';
import { FeedbackItemSchema } from '../../../schemas/bus/client-items.ts';
import { payloadsOf, recordSdkEnvelopes, type SdkEnvelopes } from '../fixtures/sdk-envelopes.ts';
import { feedbackOfUserReport } from './user-report.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});
const NOW = Date.UTC(2026, 10, 26, 12);

describe('a Sentry user_report item as feedback', () => {
  it("maps UserFeedback's comments, name and email, linked to its event_id; its id is the event's (one report per event), its time the edge's", () => {
    const [raw] = payloadsOf(sdk.userReport, 'user_report');
    const f = feedbackOfUserReport(raw, NOW, () => 'new-id')!;
    expect(f).toEqual({
      id: `user_report:${'e'.repeat(32)}`,
      source: 'user_report',
      eventId: 'e'.repeat(32),
      name: 'Grace',
      email: 'grace@example.com',
      message: 'It crashed when I saved',
      timestamp: NOW,
    });
    expect(FeedbackItemSchema.parse(f)).toEqual(f);
  });

  it('a report sent again has the same id (stored once); one without an event gets a new id', () => {
    const [raw] = payloadsOf(sdk.userReport, 'user_report');
    expect(feedbackOfUserReport(raw, NOW, () => 'a')!.id).toBe(feedbackOfUserReport(raw, NOW + 1, () => 'b')!.id);
    expect(feedbackOfUserReport({ comments: 'no event' }, NOW, () => 'new-id')!.id).toBe('new-id');
  });

  it('refuses a report without comments', () => {
    expect(feedbackOfUserReport({ event_id: 'e', name: 'n' }, NOW, () => 'x')).toBeUndefined();
    expect(feedbackOfUserReport([], NOW, () => 'x')).toBeUndefined();
  });
});
