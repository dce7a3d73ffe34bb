-- Alert rules per project (issue 41, domain/alert-rules/): when (new issue, regression, escalation, N events or N users
-- in M minutes), for which environments and levels, then e-mail and/or webhook endpoints, throttled per rule and issue.
-- A project without an alert_rule_sets row has never written its rules: it has the default rule (spec §7.6's e-mail,
-- claimed on error_groups.last_alert_at as before). The first write stores the default rule as a row and marks the set.
CREATE TABLE IF NOT EXISTS alert_rule_sets (
  project_id text PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
  customized_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE IF NOT EXISTS alert_rules (
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  id text NOT NULL,
  name text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  -- [{ "type": "new_issue" } | { "type": "event_frequency", "count": N, "minutes": M } | ...], any of them fires.
  triggers jsonb NOT NULL,
  environments text[] NOT NULL DEFAULT '{}',
  levels text[] NOT NULL DEFAULT '{}',
  email boolean NOT NULL DEFAULT false,
  endpoint_ids text[] NOT NULL DEFAULT '{}',
  throttle_minutes integer NOT NULL DEFAULT 360,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, id)
);

-- The throttle: one row per (rule, issue), claimed with a conditional upsert so concurrent processors fire once a window.
CREATE TABLE IF NOT EXISTS alert_rule_fires (
  project_id text NOT NULL,
  rule_id text NOT NULL,
  group_id text NOT NULL,
  last_fired_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, rule_id, group_id),
  FOREIGN KEY (project_id, rule_id) REFERENCES alert_rules(project_id, id) ON DELETE CASCADE
);

-- Frequency triggers: events per (rule, issue, minute) matching the rule's filters; and each user's last minute seen.
CREATE TABLE IF NOT EXISTS alert_rule_event_counts (
  project_id text NOT NULL,
  rule_id text NOT NULL,
  group_id text NOT NULL,
  minute bigint NOT NULL,
  events integer NOT NULL,
  PRIMARY KEY (project_id, rule_id, group_id, minute),
  FOREIGN KEY (project_id, rule_id) REFERENCES alert_rules(project_id, id) ON DELETE CASCADE
);

CREATE TABLE IF NOT EXISTS alert_rule_users (
  project_id text NOT NULL,
  rule_id text NOT NULL,
  group_id text NOT NULL,
  user_key text NOT NULL,
  minute bigint NOT NULL,
  PRIMARY KEY (project_id, rule_id, group_id, user_key),
  FOREIGN KEY (project_id, rule_id) REFERENCES alert_rules(project_id, id) ON DELETE CASCADE
);
