# syntax=docker/dockerfile:1
# Threadhouse: one Bun process, one SQLite file. Two volumes: /app/db (the database) and /app/uploads.

FROM oven/bun:1.4.4 AS deps
WORKDIR /app
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile --production

FROM oven/bun:1.4.4-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATABASE_PATH=/app/db/threadhouse.sqlite \
    UPLOADS_DIR=/app/uploads
COPY --from=deps /app/node_modules ./node_modules
COPY package.json bun.lock tsconfig.json ./
COPY src ./src
COPY db/migrations ./db/migrations
# The image's unprivileged `bun` user owns only the two folders it writes to.
RUN mkdir -p /app/db /app/uploads && chown bun:bun /app/db /app/uploads
USER bun
VOLUME ["/app/db", "/app/uploads"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
  CMD ["bun", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["bun", "src/index.ts"]
