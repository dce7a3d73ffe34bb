-- Mail received by mailbox inboxes (issue 25, spec §6.2): each message as it arrived (the .eml, its rawKey), the
-- fields the console lists, and its thread. A provider's redelivery of the same message finds its row by
-- (inbox, delivery id) and sends the same email.received again, which the webhook fan-out does not double.
CREATE TABLE IF NOT EXISTS mail_threads (
  id text PRIMARY KEY,
  inbox_id text NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  subject text NOT NULL,
  message_count integer NOT NULL DEFAULT 0,
  last_message_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS mail_threads_inbox ON mail_threads (inbox_id, last_message_at DESC);

CREATE TABLE IF NOT EXISTS inbound_mail (
  id text PRIMARY KEY,
  inbox_id text NOT NULL REFERENCES inboxes(id) ON DELETE CASCADE,
  thread_id text NOT NULL REFERENCES mail_threads(id) ON DELETE CASCADE,
  delivery_id text NOT NULL,
  rfc_message_id text,
  from_address text NOT NULL,
  from_name text,
  subject text NOT NULL,
  sender_authenticated boolean NOT NULL,
  attachments integer NOT NULL,
  size integer NOT NULL,
  raw bytea NOT NULL,
  received_at timestamptz NOT NULL,
  UNIQUE (inbox_id, delivery_id)
);
CREATE INDEX IF NOT EXISTS inbound_mail_inbox ON inbound_mail (inbox_id, received_at DESC);
CREATE INDEX IF NOT EXISTS inbound_mail_message_id ON inbound_mail (inbox_id, rfc_message_id);
