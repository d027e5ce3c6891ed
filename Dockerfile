# syntax=docker/dockerfile:1
#
# The pgfsm operator image:  docker build -t ghcr.io/pgfsm/pgfsm:0.1.0 .
#
# NOT BUILT YET: the machine this file was written on has no Docker engine, so `docker build` has never
# run on it. test/unit/deploy.test.ts checks it statically instead (stages, Node 20 bases, non-root user,
# entrypoint, what is copied); the build stage's last step is a smoke test of the runtime tree.
#
# There is no build step yet: the image runs the TypeScript sources through tsx, exactly like
# `npm run pgfsm`. tsx (with esbuild) is therefore needed at runtime, though package.json lists it as a
# devDependency; the build stage keeps it across the prune (see below).

# --- build: the production dependencies, plus tsx --------------------------------------------------
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Everything from the lockfile, dev dependencies included (tsx is one), exactly as locked.
RUN npm ci --no-audit --no-fund
# Drop the dev dependencies but keep tsx and esbuild (its only dependency, with the platform binary in
# @esbuild/*). Once tsx is a runtime dependency in package.json, the prune keeps them by itself and the
# copy is a no-op.
RUN mkdir /keep \
    && cp -a node_modules/tsx node_modules/esbuild node_modules/@esbuild /keep/ \
    && npm prune --omit=dev --no-audit --no-fund \
    && cp -a -n /keep/. node_modules/ \
    && rm -rf /keep
COPY tsconfig.json ./
COPY bin ./bin
COPY machines ./machines
COPY src ./src
COPY examples ./examples
# Smoke test: the command line and everything it imports load with what the runtime stage gets.
RUN TSX_DISABLE_CACHE=1 node --conditions=development --import tsx src/cli/main.ts run --help > /dev/null

# --- runtime: distroless Node.js 20, no shell, no package manager --------------------------------------
FROM gcr.io/distroless/nodejs20-debian12:nonroot
LABEL org.opencontainers.image.title="pgfsm" \
      org.opencontainers.image.description="PostgresCluster lifecycle operator for CloudNativePG, driven by an XState statechart" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="0.1.0"
WORKDIR /app
# tsx would otherwise keep a compile cache under the OS temporary directory; the Deployment runs with a
# read-only root filesystem.
ENV NODE_ENV=production \
    TSX_DISABLE_CACHE=1
# Owned by root and read-only for the operator's user: the running process cannot change its own code.
COPY --from=build /app/package.json /app/tsconfig.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/machines ./machines
COPY --from=build /app/src ./src
COPY --from=build /app/examples ./examples
# distroless' "nonroot" user.
USER 65532:65532
EXPOSE 8080
# XState's development build, as everywhere else in pgfsm (README: it rejects v4-style mistakes).
ENTRYPOINT ["/nodejs/bin/node", "--conditions=development", "--import", "tsx", "src/cli/main.ts"]
CMD ["run"]
