-- The spa build setting (issue 42, hosting/): a client-routed app's every path that no file answers serves /index.html,
-- as if its output held `/* /index.html 200` in _redirects (hosting/build/compile-site.ts writes that fallback when the
-- output has no rule for /* of its own).
ALTER TABLE project_build_settings ADD COLUMN IF NOT EXISTS spa boolean NOT NULL DEFAULT false;
