#!/usr/bin/env node
// The committed entry point of `imagegen-server`. npm links a bin when the package is installed;
// in a fresh checkout that happens before the build, so the link must point at a file that is
// already there. This file checks the Node version, gives the process the start settings below,
// and hands over to the compiled CLI.
//
// Two settings are read only when a process starts, so they are given before anything runs: where
// one is missing, the process replaces itself with the same Node, the same pid, its setting added
// (`process.execve`, POSIX), before the CLI is loaded; nothing is changed while it runs.
// `MALLOC_ARENA_MAX=2` (glibc only): glibc keeps freed image memory in one arena per thread that
// ran image work (sharp's, libuv's pool). `--max-semi-space-size=4` (MiB): V8 grows its young
// generation with the allocation rate of inline answers' base64 text. An operator's own value of
// either (in the environment, on Node's command line or in NODE_OPTIONS) is kept. Where there is
// no execve (Windows) the CLI runs as started. Figures: docs/operations.md, "Memory".
'use strict';
const { existsSync } = require('node:fs');
const { join } = require('node:path');

/**
 * The Node.js versions the service runs on, as both package.json files' `engines` say: the 22 line
 * from 22.15 (the release `npm test` runs every suite on, and the first with `process.execve`) and
 * 24 or later. 23 never became a maintained line.
 */
const SUPPORTED_NODE = '^22.15 || >=24';

/** The start settings the service's memory figures are measured with. */
const ARENAS = { name: 'MALLOC_ARENA_MAX', value: '2' };
const SEMI_SPACE = { name: '--max-semi-space-size', value: '4' };

/** For a version string such as `v20.19.0`: undefined when supported, else the one line to print. */
function unsupportedNodeMessage(version) {
	const [major, minor] = String(version).replace(/^v/, '').split('.').map(Number);
	if ((major === 22 && minor >= 15) || major >= 24) return undefined;
	return `imagegen-server: Node.js ${version} is not supported; it needs Node.js 22.15 or later on the 22 line, or 24 or later (${SUPPORTED_NODE})`;
}

/**
 * What a process started this way lacks of the start settings: the environment variables and Node
 * flags to start it again with (both empty when nothing is missing). `glibc()` is asked only on
 * Linux when the arena cap is not set.
 */
function missingStartSettings({ platform, env, execArgv, glibc }) {
	const variables = {};
	const flags = [];
	if (platform === 'linux' && env[ARENAS.name] === undefined && glibc()) variables[ARENAS.name] = ARENAS.value;
	const given = [...execArgv, ...String(env.NODE_OPTIONS ?? '').split(/\s+/)].some((flag) => flag === SEMI_SPACE.name || flag.startsWith(`${SEMI_SPACE.name}=`));
	if (!given) flags.push(`${SEMI_SPACE.name}=${SEMI_SPACE.value}`);
	return { variables, flags };
}

/** Whether this process's C library is glibc (its report names glibc's version only then). */
function runsOnGlibc() {
	process.report.excludeNetwork = true;
	return process.report.getReport().header.glibcVersionRuntime !== undefined;
}

module.exports = { SUPPORTED_NODE, unsupportedNodeMessage, missingStartSettings };

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
	const missing = missingStartSettings({ platform: process.platform, env: process.env, execArgv: process.execArgv, glibc: runsOnGlibc });
	const complete = missing.flags.length === 0 && Object.keys(missing.variables).length === 0;
	if (!complete && typeof process.execve === 'function') {
		process.execve(process.execPath, [process.execPath, ...process.execArgv, ...missing.flags, __filename, ...process.argv.slice(2)], { ...process.env, ...missing.variables });
	}
	require(cli);
}
