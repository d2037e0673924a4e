/** @type {import('jest').Config} */
module.exports = {
	testEnvironment: 'node',
	roots: ['<rootDir>/test'],
	testMatch: ['**/*.test.ts'],
	reporters: ['default', '<rootDir>/test/summary-reporter.js'],
	transform: {
		'^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
	},
	testTimeout: 60_000,
	// Suites start real servers (and n8n); two cores are all a machine here has.
	maxWorkers: 2,
};
