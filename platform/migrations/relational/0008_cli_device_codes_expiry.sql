-- Device codes expired for a day are deleted as new logins start (api/cli/cli-repository.ts).
CREATE INDEX IF NOT EXISTS cli_device_codes_expires_at ON cli_device_codes (expires_at);
