-- Webhook endpoint formats (issue 41): 'standard' (our signed JSON, spec §6.3), or the message shape of a Slack or
-- Discord incoming webhook (processor/webhooks/chat-formats.ts), chosen per endpoint. Existing endpoints stay standard.
ALTER TABLE webhook_endpoints ADD COLUMN IF NOT EXISTS format text NOT NULL DEFAULT 'standard';
