# syntax=docker/dockerfile:1
#
# The pgfsm operator image:  docker build -t ghcr.io/pgfsm/pgfsm:0.1.0 .
#
# NOT BUILT YET: the machine this file was written on has no Docker engine, so `docker build` has never
# run on it. test/unit/deploy.test.ts checks it statically instead (stages, Node 20 bases, non-root user,
# entrypoint, what is copied); test/integration/run-process.test.ts runs the same compiled entry point as
# a process against a real API server; the build stage's last step is a smoke test of the runtime tree.

# --- build: compile the TypeScript, then keep only the production dependencies ----------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Everything from the lockfile, exactly as locked: the compiler is a dev dependency.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY machines ./machines
COPY src/operator ./src/operator
RUN npm run build && npm prune --omit=dev --no-audit --no-fund
# Smoke test: the command line and everything it imports load with what the runtime stage gets.
RUN node --conditions=development dist/src/operator/cli/main.js run --help > /dev/null

# --- runtime: distroless Node.js 20, no shell, no package manager --------------------------------------
FROM gcr.io/distroless/nodejs20-debian12:nonroot
LABEL org.opencontainers.image.title="pgfsm" \
      org.opencontainers.image.description="PostgresCluster lifecycle operator for CloudNativePG, driven by an XState statechart" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"
WORKDIR /app
ENV NODE_ENV=production
# Owned by root and read-only for the operator's user: the running process cannot change its own code.
# package.json stays: it makes the code an ES module package, and pgfsm finds its root by it.
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# distroless' "nonroot" user.
USER 65532:65532
EXPOSE 8080
# XState's development build, as everywhere else in pgfsm (README: it rejects v4-style mistakes).
ENTRYPOINT ["/nodejs/bin/node", "--conditions=development", "dist/src/operator/cli/main.js"]
CMD ["run"]
