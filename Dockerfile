# syntax=docker/dockerfile:1
# Threadhouse: one Bun process, one SQLite file. Two volumes: /app/data (the database) and /app/uploads.
# The database is not kept under /app/db, where the image's migrations are: a volume there would hide them.

FROM oven/bun:1.4.4 AS deps
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production

FROM oven/bun:1.4.4-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_PATH=/app/data/threadhouse.sqlite \
    UPLOADS_DIR=/app/uploads
# Running answers get 7 s to finish: inside Docker's default 10 s between SIGTERM and SIGKILL, with room to close.
ENV SHUTDOWN_GRACE_MS=7000
COPY --from=deps /app/node_modules ./node_modules
COPY package.json bun.lock bunfig.toml tsconfig.json ./
COPY src ./src
COPY db/migrations ./db/migrations
# The image's unprivileged `bun` user owns only the two folders it writes to.
RUN mkdir -p /app/data /app/uploads && chown bun:bun /app/data /app/uploads
USER bun
VOLUME ["/app/data", "/app/uploads"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bun", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["bun", "src/index.ts"]
