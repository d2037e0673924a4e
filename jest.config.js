/**
 * Two projects: `unit` runs in a couple of minutes and needs nothing but the service and the nodes
 * (`npm run test:unit`, for the edit-test loop); `integration` needs more — a real n8n, a browser,
 * packed tarballs, embedded PostgreSQL, the S3 server, long histories or long waits. `npm test`
 * (CI and the README's promise) runs both.
 */
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const INTEGRATION = [
	'test/e2e/',
	'test/package/',
	'test/server/cli/keys-cli.test.ts',
	'test/server/db/',
	'test/server/generation/provider-fallback.test.ts',
	'test/server/http/connections.test.ts',
	'test/server/idempotency/delete-forgets-idempotency.test.ts',
	'test/server/idempotency/pg-idempotency-store.test.ts',
	'test/server/keys/admin-api.test.ts',
	'test/server/keys/data-dir-writers.test.ts',
	'test/server/keys/enforcement.test.ts',
	'test/server/keys/pg-key-store.test.ts',
	'test/server/keys/sqlite-key-store.test.ts',
	'test/server/limits/auth-failure-throttle.test.ts',
	'test/server/limits/data-dir-limits.test.ts',
	'test/server/limits/pg-rate-limiter.test.ts',
	'test/server/media/image-bombs.test.ts',
	'test/server/plugins/lazy-engines.test.ts',
	'test/server/replicas/',
	'test/server/service/faults.test.ts',
	'test/server/service/fuzz.test.ts',
	'test/server/service/history.test.ts',
	'test/server/service/lifecycle.test.ts',
	'test/server/service/outages.test.ts',
	'test/server/storage/pg-file-metadata.test.ts',
	'test/server/storage/retention.test.ts',
	'test/server/storage/s3-hosting.test.ts',
	'test/server/storage/s3-object-storage.test.ts',
	'test/server/usage/pg-usage-ledger.test.ts',
];

// A suite moved or renamed without its row here would quietly run with the unit project.
const missing = INTEGRATION.filter((path) => !existsSync(join(__dirname, path)));
if (missing.length > 0) throw new Error(`jest.config.js: no such integration suite: ${missing.join(', ')}`);

const escape = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const asGlob = (path) => (path.endsWith('/') ? `<rootDir>/${path}**/*.test.ts` : `<rootDir>/${path}`);

const project = {
	testEnvironment: 'node',
	transform: {
		'^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
		// c2pa-rs's WebAssembly build ships as an ES module only; Jest's loader needs CommonJS.
		'/node_modules/@contentauth/c2pa-wasm/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'es2022' } }],
	},
	transformIgnorePatterns: ['/node_modules/(?!@contentauth/c2pa-wasm/)'],
};

/** @type {import('jest').Config} */
module.exports = {
	projects: [
		{ ...project, displayName: 'unit', roots: ['<rootDir>/test'], testMatch: ['**/*.test.ts'], testPathIgnorePatterns: INTEGRATION.map((path) => `<rootDir>/${escape(path)}`) },
		{ ...project, displayName: 'integration', roots: ['<rootDir>/test'], testMatch: INTEGRATION.map(asGlob) },
	],
	// Suites start the built CLI: a source edit since the last build is built first.
	globalSetup: '<rootDir>/test/global-setup.cjs',
	reporters: ['default', '<rootDir>/test/summary-reporter.js'],
	testTimeout: 60_000,
	// Suites start real servers (and n8n); two cores are all a machine here has.
	maxWorkers: 2,
};
