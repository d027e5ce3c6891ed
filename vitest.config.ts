import { defineConfig } from 'vitest/config';

// Tests run against XState's development build (`--conditions=development`): only that build
// rejects v4-style `cond` and string events instead of silently misbehaving.
const development = { conditions: ['development'] };

export default defineConfig({
  resolve: development,
  ssr: { resolve: { conditions: ['development'], externalConditions: ['development'] } },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/contract/**/*.test.ts', 'test/diagram/**/*.test.ts'],
          // Not a performance bound (that is npm run bench): room for the simulation-heavy tests when two
          // cores run every file at once, where vitest's 5 s default has cut off an 0.8 s test.
          testTimeout: 30_000,
        },
      },
      {
        extends: true,
        test: { name: 'paths', include: ['test/paths/**/*.test.ts'], testTimeout: 600_000 },
      },
      {
        extends: true,
        // A real kube-apiserver + etcd on loopback; the first run builds them (minutes).
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 300_000,
          hookTimeout: 1_800_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        // A real node (kubelet, containerd, CloudNativePG's operator, PostgreSQL, PgBouncer, pgfsm's own image)
        // in a network namespace of its own; the first run builds its binaries and images (minutes). Root only.
        test: {
          name: 'e2e',
          include: ['test/e2e/*.test.ts'],
          globalSetup: ['test/e2e/support/global-setup.ts'],
          testTimeout: 600_000,
          hookTimeout: 1_800_000,
          fileParallelism: false,
        },
      },
      {
        extends: true,
        // The same real node, for the rows of docs/compatibility.md that would not fit npm test's time on a fresh
        // machine: upgrading CloudNativePG from 1.28.2 (whose operator it builds) and the DatabaseRole evidence.
        // `npm run test:compat` runs them.
        test: {
          name: 'e2e-compat',
          include: ['test/e2e/compat/*.test.ts'],
          globalSetup: ['test/e2e/support/global-setup.ts'],
          testTimeout: 900_000,
          hookTimeout: 1_800_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
