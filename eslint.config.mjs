// The published package (nodes, credentials, core, index.ts, package.json) is held to n8n's
// community-node rules, including the n8n Cloud ones. The server, tests and benchmarks are not
// part of the package and may use fs, http and timers: they get only the typescript-eslint
// recommended rules, taken from the same config so both use one typescript-eslint.
import { config as communityNodeConfig } from '@n8n/node-cli/eslint';

const PACKAGE_SOURCES = ['index.ts', 'core/**/*.ts', 'credentials/**/*.ts', 'nodes/**/*.ts'];
const SUPPORT_SOURCES = ['server/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'];

const appliesToAllTypeScript = (entry) => entry.files?.length === 1 && entry.files[0] === '**/*.ts';

const packageRules = communityNodeConfig.map((entry) =>
	appliesToAllTypeScript(entry) ? { ...entry, files: PACKAGE_SOURCES } : entry,
);
const supportRules = communityNodeConfig
	.filter((entry) => appliesToAllTypeScript(entry) && entry.name?.startsWith('typescript-eslint/'))
	.map((entry) => ({ ...entry, files: SUPPORT_SOURCES }));

export default [
	{ ignores: ['dist/**', 'server/dist/**', 'coverage/**', 'test-artifacts/**', '**/*.js', '**/*.cjs', '**/*.mjs'] },
	...packageRules,
	...supportRules,
	// Tests read arbitrary JSON answers; typing each one would only restate the assertions.
	{ files: ['test/**/*.ts'], rules: { '@typescript-eslint/no-explicit-any': 'off' } },
];
