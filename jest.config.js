/** @type {import('jest').Config} */
module.exports = {
	testEnvironment: 'node',
	roots: ['<rootDir>/test'],
	testMatch: ['**/*.test.ts'],
	reporters: ['default', '<rootDir>/test/summary-reporter.js'],
	transform: {
		'^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.test.json' }],
		// c2pa-rs's WebAssembly build ships as an ES module only; Jest's loader needs CommonJS.
		'/node_modules/@contentauth/c2pa-wasm/.+\\.js$': ['ts-jest', { tsconfig: { allowJs: true, isolatedModules: true, module: 'commonjs', target: 'es2022' } }],
	},
	transformIgnorePatterns: ['/node_modules/(?!@contentauth/c2pa-wasm/)'],
	testTimeout: 60_000,
	// Suites start real servers (and n8n); two cores are all a machine here has.
	maxWorkers: 2,
};
