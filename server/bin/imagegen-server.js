#!/usr/bin/env node
// The committed entry point of `imagegen-server`. npm links a bin when the package is installed;
// in a fresh checkout that happens before the build, so the link must point at a file that is
// already there. This file checks the Node version and hands over to the compiled CLI.
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

/**
 * The Node.js versions the service runs on, as both package.json files' `engines` say: the 22 line
 * from 22.15 (the release `npm test` runs every suite on) and 24 or later. 23 never became a
 * maintained line.
 */
const SUPPORTED_NODE = '^22.15 || >=24';

/** For a version string such as `v20.19.0`: undefined when supported, else the one line to print. */
function unsupportedNodeMessage(version) {
	const [major, minor] = String(version).replace(/^v/, '').split('.').map(Number);
	if ((major === 22 && minor >= 15) || major >= 24) return undefined;
	return `imagegen-server: Node.js ${version} is not supported; it needs Node.js 22.15 or later on the 22 line, or 24 or later (${SUPPORTED_NODE})`;
}

module.exports = { SUPPORTED_NODE, unsupportedNodeMessage };

if (require.main === module) {
	const unsupported = unsupportedNodeMessage(process.version);
	if (unsupported) {
		process.stderr.write(`${unsupported}\n`);
		process.exit(1);
	}
	const cli = join(__dirname, '..', 'dist', 'server', 'src', 'cli.js');
	if (!existsSync(cli)) {
		process.stderr.write(`imagegen-server: the service is not built yet (${cli} is missing); run npm run build first\n`);
		process.exit(1);
	}
	require(cli);
}
