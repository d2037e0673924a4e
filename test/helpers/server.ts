/**
 * Starts the built imagegen-server the way a user would (its CLI, as a child process) on a free
 * loopback port with its own temporary data dir, and stops it again.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

/** The repository root, found from wherever this file runs (tests, or compiled into bench/dist). */
function repositoryRoot(from: string): string {
	return existsSync(join(from, 'server', 'package.json')) || dirname(from) === from ? from : repositoryRoot(dirname(from));
}

export const SERVER_CLI = join(repositoryRoot(__dirname), 'server', 'dist', 'server', 'src', 'cli.js');
export const TEST_API_KEY = 'test-key-0123456789abcdef';

/** A service the suites talk to over loopback, whether a process (below) or in process (`startInProcessServer`). */
export interface ServiceUnderTest {
	/** e.g. http://127.0.0.1:41234 */
	origin: string;
	/** origin + /v1 */
	baseUrl: string;
	apiKey: string;
	dataDir: string;
	/** Everything the server printed (or logged) so far. */
	output(): string;
	/** Stops it and waits; keeps the data dir (for restart tests) unless `removeData`. */
	stop(options?: { removeData?: boolean }): Promise<void>;
}

export interface RunningServer extends ServiceUnderTest {
	process: ChildProcess;
	/** SIGTERM (or `signal`) and wait; keeps the data dir unless `removeData`. */
	stop(options?: { removeData?: boolean; signal?: NodeJS.Signals }): Promise<void>;
}

export interface StartOptions {
	args?: string[];
	env?: Record<string, string>;
	dataDir?: string;
	apiKey?: string | null;
}

const READY_LINE = /listening on (http:\/\/[^\s]+)/;

export async function startServer(options: StartOptions = {}): Promise<RunningServer> {
	const dataDir = options.dataDir ?? mkdtempSync(join(tmpdir(), 'imagegen-test-'));
	const apiKey = options.apiKey === undefined ? TEST_API_KEY : options.apiKey;
	const args = [SERVER_CLI, '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir];
	if (apiKey !== null) args.push('--api-keys', apiKey);
	args.push(...(options.args ?? []));
	const child = spawn(process.execPath, args, {
		env: { ...process.env, ...options.env },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	let output = '';
	child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
	child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));

	const origin = await new Promise<string>((resolve, reject) => {
		const timer = setTimeout(() => reject(new Error(`server did not start in 15 s:\n${output}`)), 15_000);
		const check = () => {
			const match = READY_LINE.exec(output);
			if (match) {
				clearTimeout(timer);
				resolve(match[1]!.replace(/\/$/, ''));
			}
		};
		child.stdout!.on('data', check);
		child.stderr!.on('data', check);
		child.once('exit', (code) => {
			clearTimeout(timer);
			reject(new Error(`server exited with ${code} before it was ready:\n${output}`));
		});
	});

	return {
		origin,
		baseUrl: `${origin}/v1`,
		apiKey: apiKey ?? (/^API key: (\S+)/m.exec(output)?.[1] ?? ''),
		dataDir,
		process: child,
		output: () => output,
		stop: async ({ removeData = false, signal = 'SIGTERM' } = {}) => {
			if (child.exitCode === null && child.signalCode === null) {
				const exited = new Promise((resolve) => child.once('exit', resolve));
				child.kill(signal);
				await exited;
			}
			if (removeData) rmSync(dataDir, { recursive: true, force: true });
		},
	};
}

export interface CliOutcome {
	code: number;
	stdout: string;
	stderr: string;
}

/** Runs one command of the built CLI (`keys …`, `backup …`) to its end; a failure is an outcome, not a throw. */
export async function runCli(args: string[], env: Record<string, string> = {}): Promise<CliOutcome> {
	try {
		const { stdout, stderr } = await promisify(execFile)(process.execPath, [SERVER_CLI, ...args], { env: { ...process.env, ...env } });
		return { code: 0, stdout, stderr };
	} catch (error) {
		const failed = error as { code: number; stdout: string; stderr: string };
		return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
	}
}
