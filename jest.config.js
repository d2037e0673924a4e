/**
 * Two projects: `unit` runs in about a minute from the sources alone — no build, the service in
 * process (`npm run test:unit`, for the edit-test loop); `integration` needs more — the built CLI
 * as a process (signals, crashes, restarts, printed lines, exit codes), a real n8n, a browser,
 * packed tarballs, embedded PostgreSQL, the S3 server, long histories or long waits. `npm test`
 * (CI and the README's promise) runs both.
 */
const { existsSync, readdirSync, readFileSync } = require('node:fs');
const { availableParallelism } = require('node:os');
const { join } = require('node:path');

const INTEGRATION = [
	'test/core/zod-compat.test.ts',
	'test/e2e/',
	'test/package/',
	'test/server/cli/keys-cli.test.ts',
	'test/server/cli/verify-cli-process.test.ts',
	'test/server/db/postgres/',
	'test/server/generation/provider-fallback.test.ts',
	'test/server/http/connections.test.ts',
	'test/server/idempotency/delete-forgets-idempotency.test.ts',
	'test/server/idempotency/idempotency-store-postgres.test.ts',
	// Its claim racers are child processes loading the built store (idempotency/support/claim-racer.cjs).
	'test/server/idempotency/idempotency-store-sqlite.test.ts',
	'test/server/keys/admin-api.test.ts',
	'test/server/keys/data-dir-writers.test.ts',
	'test/server/keys/enforcement.test.ts',
	'test/server/jobs/job-store-postgres.test.ts',
	'test/server/keys/key-store-postgres.test.ts',
	'test/server/keys/key-store-sqlite.test.ts',
	'test/server/limits/auth-failure-throttle.test.ts',
	'test/server/limits/data-dir-limits.test.ts',
	'test/server/limits/rate-limiter-postgres.test.ts',
	'test/server/media/image-bombs.test.ts',
	'test/server/metrics/metrics-postgres.test.ts',
	'test/server/plugins/lazy-engines.test.ts',
	'test/server/provenance/provenance-store-postgres.test.ts',
	'test/server/replicas/',
	'test/server/service/faults.test.ts',
	'test/server/service/fuzz.test.ts',
	'test/server/service/history.test.ts',
	'test/server/service/lifecycle.test.ts',
	'test/server/service/outages.test.ts',
	'test/server/storage/file-metadata-postgres.test.ts',
	'test/server/storage/s3-hosting.test.ts',
	'test/server/storage/s3-object-storage.test.ts',
	'test/server/usage/usage-ledger-postgres.test.ts',
	'test/server/webhooks/outbox-store-postgres.test.ts',
];

// A suite moved or renamed without its row here would quietly run with the unit project.
const missing = INTEGRATION.filter((path) => !existsSync(join(__dirname, path)));
if (missing.length > 0) throw new Error(`jest.config.js: no such integration suite: ${missing.join(', ')}`);

// A suite that starts the built CLI (`startServer`, `runCli`) or loads built files (`SERVER_CLI`)
// needs the build: it is an integration suite wherever it lives, without a row above.
const NEEDS_BUILD = /^import \{[^}]*\b(startServer|runCli|SERVER_CLI)\b[^}]*\} from '[./]+helpers\/server';$/m;
const BUILT = readdirSync(join(__dirname, 'test'), { recursive: true })
	.map((name) => `test/${String(name)}`)
	.filter((path) => path.endsWith('.test.ts') && NEEDS_BUILD.test(readFileSync(join(__dirname, path), 'utf8')));

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const asGlob = (path) => (path.endsWith('/') ? `<rootDir>/${path}**/*.test.ts` : `<rootDir>/${path}`);

// The tests and what they import: `--findRelatedTests <source>` and `--watch` follow a source to its suites.
const SOURCES = ['test', 'server/src', 'core', 'nodes', 'credentials'].map((folder) => `<rootDir>/${folder}`);

const project = {
	testEnvironment: 'node',
	transform: {
		'^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
		// c2pa-rs's WebAssembly build and `cookie` 2 (light-my-request's, behind `app.inject`) ship as
		// ES modules only; Jest's loader needs CommonJS.
		'/node_modules/(@contentauth/c2pa-wasm|cookie)/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'es2022' } }],
	},
	transformIgnorePatterns: ['/node_modules/(?!(@contentauth/c2pa-wasm|cookie)/)'],
};

// `IMAGEGEN_TEST_PROJECT=unit` (npm run test:unit, test:related, test:watch) keeps one project. Not
// `--selectProjects unit`: it takes every word after it as a project name, paths given to the
// script included.
const only = (projects) => (process.env.IMAGEGEN_TEST_PROJECT ? projects.filter(({ displayName }) => displayName === process.env.IMAGEGEN_TEST_PROJECT) : projects);

/** @type {import('jest').Config} */
module.exports = {
	projects: only([
		{ ...project, displayName: 'unit', roots: SOURCES, testMatch: ['<rootDir>/test/**/*.test.ts'], testPathIgnorePatterns: [...INTEGRATION, ...BUILT].map((path) => `<rootDir>/${escape(path)}`) },
		// Its suites start the built CLI: a source edit since the last build is built first (a
		// project's global setup runs only when one of its suites is about to).
		{ ...project, displayName: 'integration', roots: SOURCES, testMatch: [...new Set([...INTEGRATION, ...BUILT].map(asGlob))], globalSetup: '<rootDir>/test/global-setup.cjs' },
	]),
	// The embedded database's addon for the Node the suites run on.
	globalSetup: '<rootDir>/test/sqlite-setup.cjs',
	reporters: ['default', '<rootDir>/test/summary-reporter.js'],
	testTimeout: 60_000,
	// Suites start real servers (and n8n); two cores are all a machine here has. The unit project
	// alone (npm run test:unit, test:related, test:watch) takes two workers per core: its suites
	// spend much of their time waiting on loopback sockets and timers, which another worker's work
	// fills (on two cores: 90 s with 2 workers, 73 s with 3, 67 s with 4). At most 8: each worker
	// holds its own n8n and service, ≈ 0.5 GB.
	maxWorkers: process.env.IMAGEGEN_TEST_PROJECT === 'unit' ? Math.min(8, 2 * availableParallelism()) : 2,
};
