-- Devices a user has signed in from (issue 22): a browser holding one of these cookies is limited on its own
-- counter, so strangers guessing from the same (shared) IP cannot lock the owner out. Only the token's hash is kept.
CREATE TABLE IF NOT EXISTS sign_in_devices (
  token_hash text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS sign_in_devices_user ON sign_in_devices (user_id);
