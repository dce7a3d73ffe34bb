# One image for the three roles (ingest, processor, api); docker-compose.yml picks the role by command.
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

# The source runs as is under tsx (no build step); .dockerignore keeps node_modules and data out.
COPY . .

USER node
EXPOSE 8080
CMD ["npx", "tsx", "service/main.ts"]
