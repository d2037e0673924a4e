// `npm test`'s suites under each Node.js line the packages support (engines: `^22.15 || >=24`),
// with Node binaries that come from npm, whichever Node started `npm test`:
// - Node 22.15.0, the oldest the engines field admits (cached by scripts/node-line.cjs): every suite;
// - Node 24, the one n8n 2.x runs on and the one people deploy the service on (the n8n cache
//   holds it; installed on first use): test/server and test/core again.
// Every suite on both would double the run for the nodes, the tarballs and n8n end to end, which
// do not depend on the service's Node.
// `node scripts/test-lines.mjs [--line 22|24] [jest arguments]`; the arguments go to each pass.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const { nodeOfLine, withNodeFirst } = require('./node-line.cjs');
const jest = join(root, 'node_modules', 'jest', 'bin', 'jest.js');

const LINES = [
	{ line: '22', suites: [], covers: 'every suite' },
	// Path patterns, not a list: files added later run too.
	{ line: '24', suites: ['test/server/', 'test/core/'], covers: 'test/server and test/core' },
];

function parseArguments(args) {
	const flag = args.indexOf('--line');
	if (flag < 0) return { lines: LINES, jestArgs: args };
	const wanted = args[flag + 1];
	const lines = LINES.filter(({ line }) => line === wanted);
	if (lines.length === 0) throw new Error(`test-lines: --line must be one of ${LINES.map(({ line }) => line).join(', ')}, not ${wanted ?? 'nothing'}`);
	return { lines, jestArgs: [...args.slice(0, flag), ...args.slice(flag + 2)] };
}

function runJest(nodeBin, args) {
	return new Promise((resolve) => {
		const child = spawn(nodeBin, [jest, ...args], {
			cwd: root,
			stdio: 'inherit',
			// The suites start the CLI with process.execPath, so the service runs on this line too;
			// `node` on PATH is the same binary for anything started by name (npm, the bin's shebang).
			env: withNodeFirst(nodeBin),
		});
		child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
	});
}

/**
 * Jest runs a suite that matches any of its path arguments, so a line's own folders and the paths
 * asked for are intersected here: `--line 24 test/server/routes` runs test/server/routes only, and a
 * path outside a line's folders (test/nodes under Node 24) leaves that line out. Undefined: skip it.
 */
function pathsForLine(suites, jestArgs) {
	// Jest takes a path argument as a pattern (test/nodes/shared matches shared.test.ts): a word with
	// a slash, or a file or folder that exists, is one.
	const isPath = (arg) => !arg.startsWith('-') && (arg.includes('/') || existsSync(join(root, arg)));
	const asked = jestArgs.filter(isPath).map((path) => path.replace(/\\/g, '/'));
	const others = jestArgs.filter((arg) => !isPath(arg));
	if (asked.length === 0 || suites.length === 0) return [...suites, ...jestArgs];
	const within = [
		...asked.filter((path) => suites.some((suite) => path.startsWith(suite) || `${path}/`.startsWith(suite))),
		...suites.filter((suite) => asked.some((path) => suite.startsWith(path.endsWith('/') ? path : `${path}/`))),
	];
	return within.length > 0 ? [...within, ...others] : undefined;
}

const { lines, jestArgs } = parseArguments(process.argv.slice(2));
const results = [];
for (const { line, suites, covers } of lines) {
	const args = pathsForLine(suites, jestArgs);
	if (!args) {
		process.stdout.write(`\ntest-lines: nothing asked for is in ${covers}; Node ${line} left out\n`);
		continue;
	}
	const nodeBin = await nodeOfLine(line);
	const version = execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim();
	process.stdout.write(`\ntest-lines: ${covers}, under Node ${version} (${nodeBin})\n`);
	const started = Date.now();
	const code = await runJest(nodeBin, args);
	const narrowed = jestArgs.length > 0 ? ` narrowed by ${jestArgs.join(' ')}` : '';
	results.push({ line: `Node ${version}, ${covers}${narrowed}`, code, seconds: Math.round((Date.now() - started) / 1000) });
}
process.stdout.write('\ntest-lines:\n');
for (const { line, code, seconds } of results) process.stdout.write(`  ${code === 0 ? 'passed' : `FAILED (exit ${code})`}  ${line}: ${seconds} s\n`);
process.exit(results.every(({ code }) => code === 0) ? 0 : 1);
