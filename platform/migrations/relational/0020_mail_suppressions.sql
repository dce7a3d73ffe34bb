-- Addresses the mail provider reported as hard-bounced or complaining (issue 25, Resend's email.bounced and
-- email.complained at /v1/webhooks/email): alert mail skips them until someone re-enables them in error-alert settings.
CREATE TABLE IF NOT EXISTS mail_suppressions (
  email text PRIMARY KEY,
  reason text NOT NULL CHECK (reason IN ('bounced', 'complained')),
  at timestamptz NOT NULL,
  source_event text
);
