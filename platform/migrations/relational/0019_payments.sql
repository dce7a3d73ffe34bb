-- Payments (issue 25): Stripe accounts connected to projects (/v1/projects/:slug/payments), whose events arrive at
-- /v1/webhooks/payments/connect and become order.* project events. An account belongs to one project.
CREATE TABLE IF NOT EXISTS payment_accounts (
  account_id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS payment_accounts_project ON payment_accounts (project_id);

-- One order per payment (its PaymentIntent id), with which order.* events were emitted. Stripe does not deliver in
-- order: a refund that arrives before its payment is kept (refund_pending) and emitted right after order.paid.
CREATE TABLE IF NOT EXISTS payment_orders (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  order_id text NOT NULL,
  account_id text NOT NULL,
  amount bigint,
  currency text,
  customer_email_hash text,
  created_emitted boolean NOT NULL DEFAULT false,
  paid_emitted boolean NOT NULL DEFAULT false,
  refunded_emitted boolean NOT NULL DEFAULT false,
  refund_pending boolean NOT NULL DEFAULT false,
  amount_refunded bigint,
  updated_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, order_id)
);

-- The platform's own billing events (/v1/webhooks/payments): a ledger of what Stripe said about each project's plan.
CREATE TABLE IF NOT EXISTS billing_ledger (
  event_id text PRIMARY KEY,
  project_id text REFERENCES projects(id) ON DELETE SET NULL,
  type text NOT NULL,
  status text,
  plan text,
  amount bigint,
  currency text,
  occurred_at timestamptz NOT NULL,
  recorded_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS billing_ledger_project ON billing_ledger (project_id, occurred_at DESC);
