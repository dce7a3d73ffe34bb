# One image for the four roles (ingest, processor, api, builder); docker-compose.yml picks the role by command.
# Debian bookworm (glibc 2.36) and Node 20: what the uWebSockets.js alias and chDB's binaries load on.
FROM node:20-bookworm-slim

WORKDIR /app
ENV NODE_ENV=production

# git checks out builds; bubblewrap is the build sandbox (builder/sandbox/), socat its relay to the egress
# proxy; util-linux has setpriv.
RUN apt-get update && apt-get install -y --no-install-recommends git bubblewrap socat util-linux ca-certificates && rm -rf /var/lib/apt/lists/*

COPY package.json package-lock.json ./
# Exactly the lockfile. No dependency needs its install script (package.json allowScripts).
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# .dockerignore keeps node_modules, data and dist out; the service is compiled in the image (service/build.mjs, as
# `npm start` does): compiled JavaScript runs in less memory than the source under tsx.
COPY . .
RUN node service/build.mjs

USER node
# glibc malloc thresholds as service/start.sh sets them for `npm start` (less memory held by chDB's threads).
ENV MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072
EXPOSE 8080
# Liveness: the role's event loop answers /livez on PORT (every role serves it; README, "Health and metrics"). The image
# has no curl or wget, so node asks. docker-compose.yml replaces this with /readyz, which also asks the backends.
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 8080) + '/livez').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# node runs the service itself, so docker stop's SIGTERM reaches it (no npm process in between).
CMD ["node", "--enable-source-maps", "dist/service/main.js"]
