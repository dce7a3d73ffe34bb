-- Stripe Connect through OAuth (issue 38): an account is bound to a project only by Stripe's token exchange for the
-- signed-in member (connected_via 'stripe_oauth'). Rows made before from a typed account id stay as 'typed' (the
-- default, so nothing written without the exchange is ever taken as proven): they feed no project and read "needs
-- reconnecting" until someone connects the account through Stripe, which takes the row over.
ALTER TABLE payment_accounts ADD COLUMN IF NOT EXISTS connected_via text NOT NULL DEFAULT 'typed';
ALTER TABLE payment_accounts ADD COLUMN IF NOT EXISTS livemode boolean;
ALTER TABLE payment_accounts ADD COLUMN IF NOT EXISTS connected_by text REFERENCES users(id) ON DELETE SET NULL;

-- The one-use `state` of a connect flow (its SHA-256 only), bound to the session and member that started it and to
-- the project it connects; gone once used, when its session ends, or when it expires.
CREATE TABLE IF NOT EXISTS payment_connect_states (
  state_hash text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  session_id text NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS payment_connect_states_user ON payment_connect_states (user_id, created_at);
