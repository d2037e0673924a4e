/**
 * Runs npm the way a user types it in a shell. When the suites run under `npm test`, npm's own
 * npm_* variables (prefix, workspace, lifecycle) are in the environment and would steer a nested
 * npm towards this repository; a user's shell has none of them.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

export function userEnvironment(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
	const env: NodeJS.ProcessEnv = {};
	for (const [name, value] of Object.entries(process.env)) {
		if (!/^npm_/i.test(name)) env[name] = value;
	}
	return { ...env, ...extra };
}

export interface NpmResult {
	stdout: string;
	stderr: string;
}

export async function npm(args: string[], cwd: string, timeoutMs: number, env: Record<string, string> = {}): Promise<NpmResult> {
	try {
		return await run('npm', args, { cwd, env: userEnvironment(env), timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 });
	} catch (error) {
		const failed = error as Error & { stdout?: string; stderr?: string };
		throw new Error(`npm ${args.join(' ')} failed in ${cwd}: ${failed.message}\n${failed.stdout ?? ''}\n${failed.stderr ?? ''}`);
	}
}
