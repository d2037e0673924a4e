/**
 * `npx imagegen-server` on a fresh clone: npm links a workspace's bin when it installs, before
 * anything is built, so the bin must be a committed file. It hands over to the built CLI, and
 * says what to do when the build has not run yet. Before that it gives the process the memory
 * settings read only at start (docs/operations.md, "Memory"), replacing itself with the same Node
 * where one is missing.
 */
import { execFile } from 'node:child_process';
import { accessSync, constants, copyFileSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { missingStartSettings, SUPPORTED_NODE, unsupportedNodeMessage, unsupportedNodeOnMachine } from '../helpers/node-versions';
import { npm, userEnvironment } from './support/npm';

const run = promisify(execFile);
const ROOT = join(__dirname, '..', '..');
const BIN = join(ROOT, 'server', 'bin', 'imagegen-server.js');
const manifest = JSON.parse(readFileSync(join(ROOT, 'server', 'package.json'), 'utf8'));
/** A plain `env node`: BusyBox's env (Alpine) and npm's Windows shims run it as coreutils' does. */
const LAUNCHER = '#!/usr/bin/env node';
/** A shell's environment with this suite's Node first on PATH: the `node` the bin's first line finds. */
const withThisNode = () => ({ ...userEnvironment(), PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}` });

async function exitOf(file: string, args: string[], cwd = ROOT, env = userEnvironment()) {
	try {
		const { stdout, stderr } = await run(file, args, { cwd, env, timeout: 60_000 });
		return { code: 0, stdout, stderr };
	} catch (error) {
		const failed = error as Error & { code?: number; stdout?: string; stderr?: string };
		return { code: failed.code ?? -1, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
	}
}

test('the bin is a committed, executable node script and the package links it', async () => {
	expect(manifest.bin).toEqual({ 'imagegen-server': 'bin/imagegen-server.js' });
	const { stdout } = await run('git', ['ls-files', '--error-unmatch', 'server/bin/imagegen-server.js'], { cwd: ROOT });
	expect(stdout.trim()).toBe('server/bin/imagegen-server.js');
	expect(readFileSync(BIN, 'utf8').split('\n')[0]).toBe(LAUNCHER);
	expect(() => accessSync(BIN, constants.X_OK)).not.toThrow();
});

describe('the start settings', () => {
	/** The bin beside a CLI that reports the process it runs in; `run` starts it with this Node on PATH. */
	async function reported(env: Record<string, string | undefined>, nodeArgs: string[] = []) {
		const folder = mkdtempSync(join(tmpdir(), 'imagegen-launcher-'));
		try {
			mkdirSync(join(folder, 'bin'));
			mkdirSync(join(folder, 'dist', 'server', 'src'), { recursive: true });
			const copy = join(folder, 'bin', 'imagegen-server.js');
			copyFileSync(BIN, copy);
			writeFileSync(
				join(folder, 'dist', 'server', 'src', 'cli.js'),
				'process.stdout.write(JSON.stringify({ pid: process.pid, node: process.version, execArgv: process.execArgv, arenas: process.env.MALLOC_ARENA_MAX ?? null, args: process.argv.slice(2) }));',
			);
			const child = execFile(process.execPath, [...nodeArgs, copy, '--port', '0'], { cwd: folder, env: { ...withThisNode(), ...env }, timeout: 60_000 });
			let stdout = '';
			let stderr = '';
			child.stdout!.on('data', (chunk: string) => (stdout += chunk));
			child.stderr!.on('data', (chunk: string) => (stderr += chunk));
			const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
			return { pid: child.pid, code, stderr, report: JSON.parse(stdout) as Record<string, unknown> };
		} finally {
			rmSync(folder, { recursive: true, force: true });
		}
	}

	test(`run by its first line, it starts the CLI under this Node (${process.version}), which accepts its settings (--version)`, async () => {
		const result = await exitOf(BIN, ['--version'], ROOT, withThisNode());
		expect(result).toEqual({ code: 0, stdout: `imagegen-server ${manifest.version}\n`, stderr: '' });
	});

	test("started without them, the same process (its pid) goes on with glibc's arena cap and the semi-space cap", async () => {
		const result = await reported({ MALLOC_ARENA_MAX: undefined, NODE_OPTIONS: undefined });
		expect(result.code).toBe(0);
		expect(result.stderr).toBe('');
		expect(result.report).toEqual({ pid: result.pid, node: process.version, execArgv: ['--max-semi-space-size=4'], arenas: '2', args: ['--port', '0'] });
	});

	test("an operator's own values are kept: the arena cap from the environment, the semi-space from NODE_OPTIONS or Node's command line", async () => {
		const fromEnvironment = await reported({ MALLOC_ARENA_MAX: '4', NODE_OPTIONS: '--max-semi-space-size=8' });
		expect(fromEnvironment.report).toEqual({ pid: fromEnvironment.pid, node: process.version, execArgv: [], arenas: '4', args: ['--port', '0'] });
		const fromCommandLine = await reported({ MALLOC_ARENA_MAX: undefined, NODE_OPTIONS: undefined }, ['--max-semi-space-size=16', '--no-warnings']);
		expect(fromCommandLine.report).toEqual({ pid: fromCommandLine.pid, node: process.version, execArgv: ['--max-semi-space-size=16', '--no-warnings'], arenas: '2', args: ['--port', '0'] });
	});

	describe('what a start lacks, by platform and C library', () => {
		const glibc = () => true;
		const musl = () => false;
		test('glibc Linux without either: both', () => {
			expect(missingStartSettings({ platform: 'linux', env: {}, execArgv: [], glibc })).toEqual({ variables: { MALLOC_ARENA_MAX: '2' }, flags: ['--max-semi-space-size=4'] });
		});
		test('musl Linux (Alpine), macOS and Windows have no per-thread arenas to cap: the flag only', () => {
			expect(missingStartSettings({ platform: 'linux', env: {}, execArgv: [], glibc: musl })).toEqual({ variables: {}, flags: ['--max-semi-space-size=4'] });
			const neverAsked = () => {
				throw new Error('the C library is asked only on Linux');
			};
			expect(missingStartSettings({ platform: 'darwin', env: {}, execArgv: [], glibc: neverAsked })).toEqual({ variables: {}, flags: ['--max-semi-space-size=4'] });
			expect(missingStartSettings({ platform: 'win32', env: {}, execArgv: [], glibc: neverAsked })).toEqual({ variables: {}, flags: ['--max-semi-space-size=4'] });
		});
		test('nothing once both are given, however they were written', () => {
			for (const started of [
				{ env: { MALLOC_ARENA_MAX: '2' }, execArgv: ['--max-semi-space-size=4'] },
				{ env: { MALLOC_ARENA_MAX: '8', NODE_OPTIONS: '--enable-source-maps  --max-semi-space-size=2' }, execArgv: [] },
				{ env: { MALLOC_ARENA_MAX: '1' }, execArgv: ['--max-semi-space-size', '16'] },
			]) {
				expect(missingStartSettings({ platform: 'linux', glibc, ...started })).toEqual({ variables: {}, flags: [] });
			}
		});
		test('a flag that only begins like it is not it', () => {
			expect(missingStartSettings({ platform: 'linux', env: { MALLOC_ARENA_MAX: '2' }, execArgv: ['--max-semi-space-size-x=4'], glibc }).flags).toEqual(['--max-semi-space-size=4']);
		});
	});
});

test("package-lock.json records the same bin: npm ci links bins from the lockfile, not from package.json", () => {
	const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
	expect(lock.packages.server.bin).toEqual(manifest.bin);
});

test('run directly, it starts the built CLI (--help)', async () => {
	const result = await exitOf(BIN, ['--help']);
	expect(result.stderr).toBe('');
	expect(result.code).toBe(0);
	expect(result.stdout).toMatch(/^Usage: imagegen-server \[options\]/);
	expect(result.stdout).toContain('--data-dir');
});

test('the CLI exit codes come through the bin: an unknown flag is exit 2', async () => {
	const result = await exitOf(BIN, ['--no-such-flag']);
	expect(result.code).toBe(2);
	expect(result.stderr).toContain("Unknown option '--no-such-flag'");
});

describe('the Node version check', () => {
	test.each(['v22.15.0', 'v22.23.3', '22.15.1', 'v24.0.0', 'v24.9.0', 'v25.2.1', 'v26.0.0'])('%s is supported', (version) => {
		expect(unsupportedNodeMessage(version)).toBeUndefined();
	});

	test.each(['v20.19.0', 'v20.20.2', 'v21.7.3', 'v22.0.0', 'v22.14.0', 'v23.11.1', 'v18.20.8', 'not-a-version', ''])('%s gets one line naming it and the supported versions', (version) => {
		const message = unsupportedNodeMessage(version)!;
		expect(message).toBe(`imagegen-server: Node.js ${version} is not supported; it needs Node.js 22.15 or later on the 22 line, or 24 or later (^22.15 || >=24)`);
		expect(message).not.toContain('\n');
	});

	test('agrees with the engines field of both packages, version by version', () => {
		// eslint-disable-next-line @typescript-eslint/no-require-imports
		const { satisfies } = require('semver') as { satisfies(version: string, range: string): boolean };
		const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
		expect(manifest.engines.node).toBe(SUPPORTED_NODE);
		expect(root.engines.node).toBe(SUPPORTED_NODE);
		const versions = Array.from({ length: 12 }, (_, major) => Array.from({ length: 30 }, (_, minor) => `${major + 16}.${minor}.${minor % 3}`)).flat();
		const disagreements = versions.filter((version) => (unsupportedNodeMessage(`v${version}`) === undefined) !== satisfies(version, SUPPORTED_NODE));
		expect(disagreements).toEqual([]);
	});

	const unsupported = unsupportedNodeOnMachine();
	(unsupported ? test : test.skip)(`run with an unsupported Node (this machine's ${unsupported?.version ?? 'has none'}), it exits 1 with that line and starts nothing`, async () => {
		const result = await exitOf(unsupported!.path, [BIN, '--help']);
		expect(result.code).toBe(1);
		expect(result.stdout).toBe('');
		expect(result.stderr).toBe(`${unsupportedNodeMessage(unsupported!.version)}\n`);
	});
});

test('without a build next to it, it says to run the build and exits 1', async () => {
	const folder = mkdtempSync(join(tmpdir(), 'imagegen-unbuilt-'));
	try {
		mkdirSync(join(folder, 'bin'));
		const copy = join(folder, 'bin', 'imagegen-server.js');
		copyFileSync(BIN, copy);
		const result = await exitOf(process.execPath, [copy, '--help'], folder);
		expect(result.code).toBe(1);
		expect(result.stdout).toBe('');
		expect(result.stderr).toContain('run npm run build first');
	} finally {
		rmSync(folder, { recursive: true, force: true });
	}
});

test('`npm ci` links the bin before anything is built (this workspace and its lockfile, minus the dependencies)', async () => {
	const folder = mkdtempSync(join(tmpdir(), 'imagegen-fresh-clone-'));
	try {
		const root = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
		const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8'));
		const project = { name: root.name, version: root.version, private: true, workspaces: root.workspaces };
		const server = { ...manifest, dependencies: {} };
		writeFileSync(join(folder, 'package.json'), JSON.stringify(project));
		writeFileSync(
			join(folder, 'package-lock.json'),
			JSON.stringify({
				name: root.name,
				version: root.version,
				lockfileVersion: lock.lockfileVersion,
				requires: true,
				packages: {
					'': project,
					server: { ...lock.packages.server, dependencies: undefined },
					'node_modules/imagegen-server': lock.packages['node_modules/imagegen-server'],
				},
			}),
		);
		mkdirSync(join(folder, 'server', 'bin'), { recursive: true });
		writeFileSync(join(folder, 'server', 'package.json'), JSON.stringify(server));
		copyFileSync(BIN, join(folder, 'server', 'bin', 'imagegen-server.js'));
		await npm(['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], folder, 120_000);
		const link = join(folder, 'node_modules', '.bin', 'imagegen-server');
		expect(realpathSync(link)).toBe(realpathSync(join(folder, 'server', 'bin', 'imagegen-server.js')));
		const result = await exitOf('npx', ['--no-install', 'imagegen-server', '--help'], folder);
		expect(result.code).toBe(1);
		expect(result.stderr).toContain('run npm run build first');
	} finally {
		rmSync(folder, { recursive: true, force: true });
	}
});

test('`npm exec imagegen-server` from the repository root finds the link that npm ci made', async () => {
	const link = join(ROOT, 'node_modules', '.bin', 'imagegen-server');
	expect(realpathSync(link)).toBe(realpathSync(BIN));
	const result = await exitOf('npm', ['exec', 'imagegen-server', '--', '--help']);
	expect(result.code).toBe(0);
	expect(result.stdout).toContain('Usage: imagegen-server [options]');
});
