// Runs the service's suites (test/server, test/core) once more under Node 24, the version n8n 2.x
// runs on and the one people deploy the service on. The Node 24 binary is the one the n8n cache
// holds (installed on first use).
// Skipped when `npm test` itself already runs on Node 24 or later.
import { execFileSync, spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { ensureN8n } = require('./n8n/install.cjs');
const { ensureSqliteAddon } = require('./sqlite-addon.cjs');

// Path patterns, not a list: files added later run too.
const SUITES = ['test/server/', 'test/core/'];
const major = Number(process.versions.node.split('.')[0]);

if (major >= 24) {
	process.stdout.write(`test-node24: already running on Node ${process.versions.node}; nothing more to run\n`);
} else {
	const { nodeBin, nodeHome } = await ensureN8n();
	ensureSqliteAddon({ nodeBin, nodedir: nodeHome });
	const version = execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim();
	process.stdout.write(`test-node24: test/server and test/core again, under Node ${version} (${nodeBin})\n`);
	const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');
	const child = spawn(nodeBin, [jest, ...SUITES, ...process.argv.slice(2)], {
		cwd: root,
		stdio: 'inherit',
		// The suites start the CLI with process.execPath, so the service runs on Node 24 too; `node`
		// on PATH is the same binary for anything started by name.
		env: { ...process.env, PATH: `${dirname(nodeBin)}${delimiter}${process.env.PATH ?? ''}` },
	});
	child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}
