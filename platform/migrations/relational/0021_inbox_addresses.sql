-- Mailbox inboxes (issue 25, spec §6.2): an address receives mail for one inbox only.
CREATE UNIQUE INDEX IF NOT EXISTS inboxes_address ON inboxes (lower(address));
