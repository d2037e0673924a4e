// A Jest `--filter` for the edit-test loop (`npm run test:related`, `npm run test:watch`): of the
// suites Jest found related to the changed files, keeps the nearest ones — a suite named after a
// changed file (`routes/files.ts` → `files.test.ts`, `uploads.ts` → `uploads.test.ts`) or one that
// imports it itself; else those in the folder that mirrors the file's (`test/server/routes/` for
// `server/src/routes/health.ts`); else all of them. Every route is registered in `app.ts`, which
// every in-process suite builds, so Jest alone relates a route to some 30 suites; the nearest answer
// in seconds. `npm run test:unit` runs everything.
'use strict';
const { execFileSync } = require('node:child_process');
const { readFileSync } = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const SOURCE = /\.(ts|js|cjs|mjs)$/;

/** The files named after --findRelatedTests, else what git sees changed (what --watch and -o run on). */
function changedFiles() {
	const flag = process.argv.findIndex((arg) => arg === '--findRelatedTests' || arg === '--find-related-tests');
	if (flag >= 0) return process.argv.slice(flag + 1).filter((arg) => !arg.startsWith('-') && SOURCE.test(arg)).map((file) => path.resolve(file));
	const status = execFileSync('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: root, encoding: 'utf8' });
	return status
		.split('\n')
		.map((line) => line.slice(3).split(' -> ').pop())
		.filter((file) => file && SOURCE.test(file))
		.map((file) => path.join(root, file));
}

const moduleName = (file) => path.basename(file).replace(/(\.test)?\.[cm]?[jt]s$/, '');

/** Whether `suite` imports `changed` by a relative path of its own. */
function importsDirectly(suite, changed) {
	const text = readFileSync(suite, 'utf8');
	for (const [, specifier] of text.matchAll(/from '(\.[^']+)'|require\('(\.[^']+)'\)/g)) {
		if (specifier && path.resolve(path.dirname(suite), specifier).replace(/\.[cm]?[jt]s$/, '') === changed.replace(/\.[cm]?[jt]s$/, '')) return true;
	}
	return false;
}

/** test/server/<folder>/ for server/src/<folder>/…, test/<folder>/ for core/, nodes/ …; tests stay where they are. */
function mirrorFolder(file) {
	const relative = path.relative(root, file).split(path.sep);
	if (relative[0] === 'test') return path.dirname(file);
	if (relative[0] === 'server' && relative[1] === 'src') return path.join(root, 'test', 'server', relative.length > 3 ? relative[2] : '');
	return path.join(root, 'test', relative[0] === 'credentials' ? 'nodes' : relative[0]);
}

module.exports = async function nearestSuites(testPaths) {
	const changed = changedFiles();
	const named = testPaths.filter((suite) =>
		changed.some((file) => file === suite || moduleName(suite).startsWith(moduleName(file)) || importsDirectly(suite, file)),
	);
	if (named.length > 0) return { filtered: named };
	const mirrored = testPaths.filter((suite) => changed.some((file) => path.dirname(suite) === mirrorFolder(file)));
	return { filtered: mirrored.length > 0 ? mirrored : testPaths };
};
