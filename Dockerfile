# imagegen-server as a container. Build: docker build -t imagegen-server .
# Run:   docker run -p 8080:8080 -v imagegen-data:/data -e IMAGEGEN_API_KEYS=… imagegen-server
# Every flag has an IMAGEGEN_* environment twin (see `imagegen-server --help`).

# Stage 1: compile the service and pack it exactly as it is published to npm.
FROM node:24-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.json ./
COPY server/package.json server/tsconfig.json server/
# Install scripts stay off: compiling needs only TypeScript and type packages.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY core core
COPY server/src server/src
COPY server/bin server/bin
COPY server/admin server/admin
COPY server/README.md server/LICENSE server/
RUN npx tsc -p server/tsconfig.json \
	&& npm pack --workspace server --pack-destination /tmp \
	&& mv /tmp/imagegen-server-*.tgz /tmp/imagegen-server.tgz

# Stage 2: the published package and its production dependencies, nothing else.
# Install scripts run here: better-sqlite3 fetches its prebuilt addon for this Node and platform.
# The slim image has no compiler to fall back on, so the addon is loaded once now: an image
# without it fails to build instead of failing at its first start.
FROM node:24-slim
ENV NODE_ENV=production
COPY --from=build /tmp/imagegen-server.tgz /tmp/imagegen-server.tgz
RUN npm install --global --omit=dev --no-audit --no-fund /tmp/imagegen-server.tgz \
	&& cd "$(npm root --global)/imagegen-server" \
	&& node -e "new (require('better-sqlite3'))(':memory:').close()" \
	&& rm /tmp/imagegen-server.tgz \
	&& npm cache clean --force \
	&& mkdir /data \
	&& chown node:node /data
USER node
VOLUME /data
EXPOSE 8080
# No curl in the slim image: Node itself asks /healthz.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
	CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.IMAGEGEN_PORT || 8080) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Exec form, no shell: node is PID 1 and receives SIGTERM itself (the CLI drains and exits).
# `docker run --init` / compose `init: true` adds a reaper in front, which is also fine.
CMD ["imagegen-server", "--host", "0.0.0.0", "--data-dir", "/data"]
