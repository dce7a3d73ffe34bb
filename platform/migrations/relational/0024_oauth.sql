-- OAuth for the MCP endpoint (issue 27, MCP authorization 2025-11-25): registered clients (dynamic registration,
-- public clients with PKCE), one-use authorization codes, and the cxm_ access tokens with their rotating refresh
-- tokens, bound to the /v1/mcp resource. Codes and tokens are kept as SHA-256 only.
CREATE TABLE IF NOT EXISTS oauth_clients (
  id text PRIMARY KEY,
  name text NOT NULL,
  redirect_uris text[] NOT NULL,
  created_at timestamptz NOT NULL
);

CREATE TABLE IF NOT EXISTS oauth_codes (
  code_hash text PRIMARY KEY,
  client_id text NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  redirect_uri text NOT NULL,
  code_challenge text NOT NULL,
  resource text NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);

CREATE TABLE IF NOT EXISTS mcp_tokens (
  id text PRIMARY KEY,
  client_id text NOT NULL REFERENCES oauth_clients(id) ON DELETE CASCADE,
  user_id text NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  resource text NOT NULL,
  token_hash text NOT NULL UNIQUE,
  refresh_hash text UNIQUE,
  expires_at timestamptz NOT NULL,
  refresh_expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  last_used_at timestamptz,
  revoked_at timestamptz
);
CREATE INDEX IF NOT EXISTS mcp_tokens_user ON mcp_tokens (user_id, created_at DESC);
