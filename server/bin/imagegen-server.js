#!/usr/bin/env -S MALLOC_ARENA_MAX=2 node --max-semi-space-size=4
// The committed entry point of `imagegen-server`. npm links a bin when the package is installed;
// in a fresh checkout that happens before the build, so the link must point at a file that is
// already there. This file checks the Node version and hands over to the compiled CLI.
//
// The first line is the service's launcher: `env -S` (GNU coreutils 8.30+, macOS 10.15+, FreeBSD;
// npm's Windows shims read it too) starts Node with two settings read once at process start,
// never changed while it runs. `MALLOC_ARENA_MAX=2`: glibc keeps freed image memory in one arena
// per thread that ran image work (sharp's, libuv's pool), ≈ 80 MB under inline generations.
// `--max-semi-space-size=4` (MiB): V8 grows its young generation with the allocation rate, to
// 64 MB on Node 24 (32 MB on Node 22) under inline answers' base64 text; 1 MiB promotes too early,
// 16 MiB is too much on Node 24. Figures, and where `env -S` is missing: docs/operations.md, "Memory".
// `node bin/imagegen-server.js` (or `node dist/server/src/cli.js`) bypasses this line.
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
