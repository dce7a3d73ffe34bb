// A Node app using the real @sentry/node as its users do: an error, then the user's feedback about it
// (Sentry.captureFeedback with associatedEventId), pointed at the service by SENTRY_DSN.
import * as Sentry from '@sentry/node';

Sentry.init({ dsn: process.env.SENTRY_DSN, environment: 'production', tracesSampleRate: 0 });

const eventId = Sentry.captureException(new Error('checkout button does nothing'));
const feedbackId = Sentry.captureFeedback({
  message: 'I pressed Pay twice; my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789',
  name: 'Ann Buyer',
  email: 'ann@example.com',
  url: 'https://shop.example.com/checkout',
  associatedEventId: eventId,
});
const delivered = await Sentry.flush(10_000);
process.stdout.write(JSON.stringify({ delivered, eventId, feedbackId }));
