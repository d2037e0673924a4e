// Installs this repository's package into an n8n user folder the way n8n installs a community
// package: the `npm pack` tarball unpacked into .n8n/nodes/node_modules/<name>, with no
// node_modules of its own, so `zod` and `n8n-workflow` resolve from n8n itself.
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const REPOSITORY_ROOT = path.join(__dirname, '..', '..');
const PACKAGE_NAME = require(path.join(REPOSITORY_ROOT, 'package.json')).name;

/** Packs the built package (run `npm run build` first); returns the tarball's path. */
function packPackage(destination = fs.mkdtempSync(path.join(os.tmpdir(), 'imagegen-pack-'))) {
	if (!fs.existsSync(path.join(REPOSITORY_ROOT, 'dist', 'index.js'))) {
		throw new Error('dist/ is missing: run `npm run build` first');
	}
	const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', destination], {
		cwd: REPOSITORY_ROOT,
		encoding: 'utf8',
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	const [{ filename }] = JSON.parse(output);
	return path.join(destination, path.basename(filename));
}

/** Replaces any previous copy in `userFolder`; returns the installed package's folder. */
function installCommunityPackage(userFolder, { tarball = packPackage() } = {}) {
	const nodesFolder = path.join(userFolder, '.n8n', 'nodes');
	const target = path.join(nodesFolder, 'node_modules', PACKAGE_NAME);
	fs.rmSync(target, { recursive: true, force: true });
	fs.mkdirSync(target, { recursive: true });
	execFileSync('tar', ['-xzf', tarball, '-C', target, '--strip-components=1']);
	// n8n keeps a package.json in the nodes folder listing what is installed there.
	const manifest = path.join(nodesFolder, 'package.json');
	const current = fs.existsSync(manifest) ? JSON.parse(fs.readFileSync(manifest, 'utf8')) : { name: 'installed-nodes', private: true };
	const version = require(path.join(target, 'package.json')).version;
	current.dependencies = { ...current.dependencies, [PACKAGE_NAME]: version };
	fs.writeFileSync(manifest, JSON.stringify(current, null, '\t'));
	return target;
}

module.exports = { PACKAGE_NAME, REPOSITORY_ROOT, installCommunityPackage, packPackage };
