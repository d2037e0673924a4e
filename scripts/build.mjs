// Builds the n8n package (nodes, credentials, core → dist/, with their icons and codex files)
// and the imagegen-server workspace. Type errors fail the build.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const run = (project) => execFileSync(process.execPath, [tsc, '-p', project], { cwd: root, stdio: 'inherit' });

// A clean start: a file whose source is gone must not linger in dist/ (and so in a tarball).
for (const output of ['dist', join('server', 'dist')]) rmSync(join(root, output), { recursive: true, force: true });
run('tsconfig.json');
const assets = ['icons', 'nodes', 'credentials'].filter((folder) => existsSync(join(root, folder))).flatMap((folder) =>
	readdirSync(join(root, folder), { recursive: true })
		.map((file) => join(folder, String(file)))
		.filter((file) => /\.(svg|png|json)$/.test(file)),
);
for (const asset of assets) {
	const target = join(root, 'dist', asset);
	mkdirSync(dirname(target), { recursive: true });
	cpSync(join(root, asset), target);
}
run('server/tsconfig.json');
// The service's embedded database needs its native addon for this Node (install scripts are off).
createRequire(import.meta.url)('./sqlite-addon.cjs').ensureSqliteAddon();
// `npx imagegen-server` runs the committed server/bin/imagegen-server.js, which loads the built CLI.
