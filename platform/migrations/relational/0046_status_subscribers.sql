-- Status page subscribers (issue 43): people who asked for mail about a project's status page (double opt-in), and
-- the project's own webhook receivers of it. An e-mail subscriber is 'pending' until its confirmation link is opened;
-- only 'confirmed' ones get mail. The confirmation token is kept as a hash (sent once); the unsubscribe token is kept
-- readable, as a webhook secret is, because every mail carries it (it can only end this one subscription). A webhook
-- subscriber is a webhook endpoint of the project (subscribed to uptime.incident.* and uptime.maintenance.*), so the
-- existing pipeline signs, retries and logs its deliveries; deleting either removes both.
CREATE TABLE IF NOT EXISTS status_subscribers (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('email', 'webhook')),
  email text,
  endpoint_id text REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  status text NOT NULL CHECK (status IN ('pending', 'confirmed')),
  confirm_token_hash text UNIQUE,
  confirm_expires_at timestamptz,
  unsubscribe_token text UNIQUE,
  created_at timestamptz NOT NULL,
  confirmed_at timestamptz,
  CHECK ((kind = 'email') = (email IS NOT NULL)),
  CHECK ((kind = 'webhook') = (endpoint_id IS NOT NULL))
);
CREATE UNIQUE INDEX IF NOT EXISTS status_subscribers_email ON status_subscribers (project_id, email) WHERE email IS NOT NULL;
CREATE INDEX IF NOT EXISTS status_subscribers_project ON status_subscribers (project_id, created_at);

-- One row per (event, subscriber) mailed: a project event delivered again by the bus mails nobody twice.
CREATE TABLE IF NOT EXISTS status_subscriber_mails (
  event_id text NOT NULL,
  subscriber_id text NOT NULL REFERENCES status_subscribers(id) ON DELETE CASCADE,
  sent_at timestamptz NOT NULL,
  PRIMARY KEY (event_id, subscriber_id)
);
CREATE INDEX IF NOT EXISTS status_subscriber_mails_sent ON status_subscriber_mails (sent_at);
