-- Accounts and credentials (spec §5). Every secret is stored only as its SHA-256 (token_hash).
CREATE TABLE IF NOT EXISTS users (
  id text PRIMARY KEY,
  email text NOT NULL UNIQUE,
  password_hash text NOT NULL,
  name text,
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS sessions (
  id text PRIMARY KEY,
  token_hash text NOT NULL UNIQUE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at timestamptz
);

CREATE TABLE IF NOT EXISTS projects (
  id text PRIMARY KEY,
  slug text NOT NULL UNIQUE,
  name text NOT NULL,
  owner_id text NOT NULL REFERENCES users(id),
  default_branch text NOT NULL DEFAULT 'main',
  -- Hostnames; a leading "*." matches any subdomain. Error tracking stamps environments from these (§7.4).
  production_domains text[] NOT NULL DEFAULT '{}',
  preview_domains text[] NOT NULL DEFAULT '{}',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS project_members (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  role text NOT NULL DEFAULT 'owner',
  PRIMARY KEY (project_id, user_id)
);

-- Project API keys (kind live/test: cx_live_/cx_test_, with scopes) and ingest keys (kind ingest: cak_live_).
CREATE TABLE IF NOT EXISTS api_keys (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  kind text NOT NULL CHECK (kind IN ('live', 'test', 'ingest')),
  name text NOT NULL DEFAULT '',
  -- First characters of the token after its prefix, to tell keys apart in lists.
  hint text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  scopes text[] NOT NULL DEFAULT '{}',
  created_by text REFERENCES users(id) ON DELETE SET NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX IF NOT EXISTS api_keys_project ON api_keys (project_id);

CREATE TABLE IF NOT EXISTS cli_tokens (
  id text PRIMARY KEY,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  name text NOT NULL DEFAULT '',
  hint text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  revoked_at timestamptz
);

-- CLI device login: start -> approve in a signed-in session -> poll.
CREATE TABLE IF NOT EXISTS cli_device_codes (
  id text PRIMARY KEY,
  device_code_hash text NOT NULL UNIQUE,
  user_code text NOT NULL UNIQUE,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'consumed')),
  user_id text REFERENCES users(id) ON DELETE CASCADE,
  client_name text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  last_polled_at timestamptz
);

-- One row once the first start created the owner account and demo project; it never happens again.
CREATE TABLE IF NOT EXISTS instance_bootstrap (
  id integer PRIMARY KEY CHECK (id = 1),
  done_at timestamptz NOT NULL DEFAULT now()
);
