# syntax=docker/dockerfile:1
#
# The pgfsm operator image:  docker build -t ghcr.io/pgfsm/pgfsm:0.1.0 .
#
# Built here without a Docker engine (pgfsm's development machines have no Docker engine and cannot pull from
# image registries): src/tools/node/images.ts (ensurePgfsmImage) builds this very file with Debian's buildah
# (`buildah bud --pull=never --layers --network host`), passing as BUILD_IMAGE and RUNTIME_IMAGE local stand-ins
# made from Debian trixie's Node.js 20 packages (a build base with npm; a distroless-like runtime with
# /nodejs/bin/node and user 65532), and writes localhost/pgfsm/pgfsm:<version> as a docker-archive, which the
# real node (src/tools/node/) imports into its containerd: the e2e suite (test/e2e/, part of `npm test`) runs it
# there as the two-replica Deployment of `kubectl apply -k deploy/overlays/local-image/`. test/unit/deploy.test.ts
# also checks the file statically (stages, Node 20 bases, non-root user, entrypoint, what is copied); the build
# stage's last step is a smoke test of the runtime tree.

# The two base images, overridable where the public ones cannot be pulled (pgfsm's own machines build their
# local stand-ins from Debian packages and pass them here); unset, the defaults below are used.
ARG BUILD_IMAGE
ARG RUNTIME_IMAGE

# --- build: compile the TypeScript, then keep only the production dependencies ----------------------
FROM ${BUILD_IMAGE:-docker.io/library/node:20-bookworm-slim} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Everything from the lockfile, exactly as locked: the compiler is a dev dependency.
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY machines ./machines
COPY src/operator ./src/operator
RUN npm run build && npm prune --omit=dev --no-audit --no-fund
# Smoke test: the command line and everything it imports load with what the runtime stage gets, as the
# entrypoint runs them.
RUN node dist/src/operator/cli/main.js --version && node dist/src/operator/cli/main.js run --help > /dev/null

# --- runtime: distroless Node.js 20, no shell, no package manager --------------------------------------
FROM ${RUNTIME_IMAGE:-gcr.io/distroless/nodejs20-debian12:nonroot}
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
# XState's production build (no --conditions=development): the tests run the development build, which rejects
# v4-style mistakes in the machines (vitest.config.ts), so it has nothing left to catch here.
ENTRYPOINT ["/nodejs/bin/node", "dist/src/operator/cli/main.js"]
CMD ["run"]
