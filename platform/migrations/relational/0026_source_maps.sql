-- Source maps (issue 37), kept privately: a deploy's, collected from its build output by the builder, and a project's
-- uploads (sentry-cli's artifact bundles, `cx sourcemaps upload`). The processor resolves an event's minified frames
-- through them: by the served path of the file a map maps (a deploy's `/assets/index-3f9a2c1b.js`, an upload's
-- `~/assets/index.js` without the `~`) or by the debug id the bundler wrote into both. The content never reaches a
-- public host; it goes with its deploy (the artifact sweep) or, for uploads, with the project's oldest bundles.
CREATE TABLE IF NOT EXISTS source_maps (
  id text PRIMARY KEY,
  project_id text NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
  deploy_id text REFERENCES deploys(id) ON DELETE CASCADE,
  -- An upload's bundle (sentry-cli's checksum of the whole bundle, or ours): NULL for a deploy's maps.
  bundle_id text,
  served_path text,
  debug_id uuid,
  -- The map's own path in the build output or the bundle, shown on the deploy page.
  map_name text NOT NULL,
  size integer NOT NULL,
  content bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  CHECK (deploy_id IS NOT NULL OR bundle_id IS NOT NULL)
);
CREATE INDEX IF NOT EXISTS source_maps_by_path ON source_maps (project_id, served_path, created_at DESC) WHERE served_path IS NOT NULL;
CREATE INDEX IF NOT EXISTS source_maps_by_debug_id ON source_maps (project_id, debug_id) WHERE debug_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS source_maps_by_deploy ON source_maps (deploy_id) WHERE deploy_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS source_maps_by_bundle ON source_maps (project_id, bundle_id) WHERE bundle_id IS NOT NULL;

-- Whether a project's sites serve its `.map` files to anyone (off: a `.map` answers as a missing file).
ALTER TABLE projects ADD COLUMN IF NOT EXISTS serve_source_maps boolean NOT NULL DEFAULT false;
