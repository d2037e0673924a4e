// Before the integration project's suites (jest.config.js; the unit project needs no build):
// rebuild when a source file is newer than the build, so that suites which start the built CLI
// (`server/dist`) or load the built package (`dist/`) never test stale code after an edit, whether
// they run through `npm test` (which has just built) or alone (`npx jest <file>`).
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const SOURCES = ['core', 'nodes', 'credentials', 'index.ts', path.join('server', 'src')];
const OUTPUTS = [path.join('dist', 'index.js'), path.join('server', 'dist', 'server', 'src', 'cli.js')];

function newestSource(entry) {
	const full = path.join(root, entry);
	if (!fs.existsSync(full)) return 0;
	const stat = fs.statSync(full);
	if (!stat.isDirectory()) return stat.mtimeMs;
	let newest = 0;
	for (const name of fs.readdirSync(full, { recursive: true })) {
		if (String(name).endsWith('.ts')) newest = Math.max(newest, fs.statSync(path.join(full, String(name))).mtimeMs);
	}
	return newest;
}

function oldestOutput() {
	let oldest = Infinity;
	for (const output of OUTPUTS) {
		const full = path.join(root, output);
		oldest = Math.min(oldest, fs.existsSync(full) ? fs.statSync(full).mtimeMs : 0);
	}
	return oldest;
}

module.exports = async function buildWhenStale() {
	const source = Math.max(...SOURCES.map(newestSource));
	if (source > oldestOutput()) {
		process.stderr.write('\nglobal setup: sources changed since the last build; building first\n');
		execFileSync(process.execPath, [path.join(root, 'scripts', 'build.mjs')], { cwd: root, stdio: 'inherit' });
	}
};
