-- OAuth and device flow per the RFCs (issue 38).
-- A grant: every MCP token descended from one authorization code (the first exchange and each refresh after it)
-- carries the code's grant_id, so a reused code (RFC 6749 §4.1.2) or a reused refresh token revokes the whole family.
-- A spent refresh token keeps its hash with refreshed_at set, so its second use is recognised as reuse rather than
-- as an unknown token. Tokens issued before have no code to descend from: each is a family of its own.
ALTER TABLE oauth_codes ADD COLUMN IF NOT EXISTS grant_id text;
ALTER TABLE mcp_tokens ADD COLUMN IF NOT EXISTS grant_id text;
ALTER TABLE mcp_tokens ADD COLUMN IF NOT EXISTS refreshed_at timestamptz;
UPDATE mcp_tokens SET grant_id = id WHERE grant_id IS NULL;
CREATE INDEX IF NOT EXISTS mcp_tokens_grant ON mcp_tokens (grant_id);

-- Where and when a CLI device login started (RFC 8628 §5.4: the approval page shows it), and the interval this
-- login's polls must keep (§3.5: each poll sooner than it answers slow_down and adds 5 s).
ALTER TABLE cli_device_codes ADD COLUMN IF NOT EXISTS request_ip text;
ALTER TABLE cli_device_codes ADD COLUMN IF NOT EXISTS request_user_agent text;
ALTER TABLE cli_device_codes ADD COLUMN IF NOT EXISTS poll_interval_sec integer;
