#!/bin/sh
# `npm start` (and `npm run start:<role>`): compile the service (service/build.mjs writes nothing when nothing
# changed), then replace this shell with node running it, so signals reach the service itself.
#
# glibc's malloc, for the embedded default (issue 44): chDB's threads allocate through glibc, whose per-thread arenas
# keep what large buffers (merges, compression) freed, and whose mmap threshold rises after each large free so later
# ones stay in the arenas too. Fixed thresholds send allocations of 128 KiB and more to mmap, returned to the system
# when freed, and trim the arenas' tops: ~60-100 MB less resident at 40 events/s for no measurable CPU
# (bench/README.md, "Footprint"). A value already in the environment wins; the image sets the same (Dockerfile).
set -e
cd "$(dirname "$0")/.."
node service/build.mjs
export MALLOC_MMAP_THRESHOLD_="${MALLOC_MMAP_THRESHOLD_:-131072}"
export MALLOC_TRIM_THRESHOLD_="${MALLOC_TRIM_THRESHOLD_:-131072}"
exec node --enable-source-maps dist/service/main.js "$@"
