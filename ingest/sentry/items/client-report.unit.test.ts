import { beforeAll, describe, expect, it } from 'vitest';
import { payloadsOf, recordSdkEnvelopes, type SdkEnvelopes } from '../fixtures/sdk-envelopes.ts';
import { discardedOfClientReport } from './client-report.ts';

let sdk: SdkEnvelopes;
beforeAll(async () => {
  sdk = await recordSdkEnvelopes();
});

describe('a Sentry client report', () => {
  it("sums the SDK's discarded quantities by reason", () => {
    const [raw] = payloadsOf(sdk.clientReport, 'client_report');
    const into: Record<string, number> = { sdk_discarded_sample_rate: 2 };
    discardedOfClientReport(raw, into);
    expect(into).toEqual({ sdk_discarded_ratelimit_backoff: 4, sdk_discarded_sample_rate: 3 });
  });

  it('never names a counter from client input, and skips quantities that are not positive whole numbers', () => {
    const into: Record<string, number> = {};
    discardedOfClientReport(
      {
        discarded_events: [
          { reason: 'made_up_reason', quantity: 2 },
          { reason: 'before_send', quantity: -1 },
          { reason: 'before_send', quantity: 1.5 },
          { reason: '__proto__', quantity: 1 },
        ],
      },
      into,
    );
    expect(into).toEqual({ sdk_discarded_other: 3 });
    discardedOfClientReport({ discarded_events: 'x' }, into);
    discardedOfClientReport(null, into);
    expect(into).toEqual({ sdk_discarded_other: 3 });
  });
});
