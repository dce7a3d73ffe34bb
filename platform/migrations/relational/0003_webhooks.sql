-- Outbound project webhooks (spec §2.1-2.3, §3.2, §6): endpoints, inboxes' own webhook targets,
-- deliveries (one per event and target, the unit of retry) and the attempt log (last 100 per endpoint).
-- Times that drive scheduling are epoch milliseconds (bigint) written from the platform clock, so
-- tests move them with a manual clock and every process compares the same numbers.
-- Secrets are kept readable: the service must sign with them on every send (a hash cannot sign).
CREATE TABLE IF NOT EXISTS webhook_endpoints (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  url text NOT NULL,
  description text NOT NULL DEFAULT '',
  -- Empty = every event except email.received (§6.1).
  events text[] NOT NULL DEFAULT '{}',
  max_attempts integer NOT NULL DEFAULT 6 CHECK (max_attempts BETWEEN 1 AND 10),
  secret text NOT NULL,
  -- During a rotation the previous secret keeps signing until previous_secret_until (epoch ms).
  previous_secret text,
  previous_secret_until bigint,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_endpoints_project ON webhook_endpoints (project_id);

-- A mailbox inbox; its own webhook target (§6.2) is managed by the mailbox routes and never listed
-- among the project's webhook endpoints.
CREATE TABLE IF NOT EXISTS inboxes (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  address text NOT NULL,
  webhook_url text,
  webhook_secret text,
  webhook_previous_secret text,
  webhook_previous_secret_until bigint,
  created_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS inboxes_project ON inboxes (project_id);

-- status: pending (waiting for next_attempt_at), sending (leased by one processor until lease_until),
-- succeeded, dead (attempt budget used; keeps its last error). Exactly one of endpoint_id / inbox_id.
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  id text PRIMARY KEY,
  project_id text NOT NULL,
  endpoint_id text REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  inbox_id text REFERENCES inboxes(id) ON DELETE CASCADE,
  event_id text NOT NULL,
  event text NOT NULL,
  data jsonb NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sending', 'succeeded', 'dead')),
  -- Attempts used out of max_attempts in the current budget (a replay resets it).
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  -- Attempts ever started, across replays: numbers the attempt log.
  attempt_seq integer NOT NULL DEFAULT 0,
  next_attempt_at bigint NOT NULL,
  lease_until bigint,
  lease_token text,
  last_error text,
  last_response_code integer,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  CHECK ((endpoint_id IS NULL) <> (inbox_id IS NULL))
);
-- The sweep's two ways in: due pending deliveries, and leases that ran out mid-send.
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_lease ON webhook_deliveries (lease_until) WHERE status = 'sending';
CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id);

CREATE TABLE IF NOT EXISTS webhook_attempts (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  delivery_id text NOT NULL REFERENCES webhook_deliveries(id) ON DELETE CASCADE,
  endpoint_id text REFERENCES webhook_endpoints(id) ON DELETE CASCADE,
  inbox_id text REFERENCES inboxes(id) ON DELETE CASCADE,
  attempt integer NOT NULL,
  status text NOT NULL CHECK (status IN ('succeeded', 'failed')),
  response_code integer,
  error text,
  started_at bigint NOT NULL,
  finished_at bigint NOT NULL,
  -- When the next attempt of the delivery is due after this one (null: none).
  next_attempt_at bigint
);
CREATE INDEX IF NOT EXISTS webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id DESC);
CREATE INDEX IF NOT EXISTS webhook_attempts_delivery ON webhook_attempts (delivery_id);
