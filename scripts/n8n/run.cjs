// Runs n8n's CLI with Node 24 from the cache: one-shot commands (import, execute) and the editor.
'use strict';
const { spawn } = require('node:child_process');
const net = require('node:net');
const { n8nEnvironment } = require('./environment.cjs');

function tryListen(port) {
	return new Promise((resolve) => {
		const server = net.createServer();
		server.once('error', () => resolve(undefined));
		server.listen(port, '127.0.0.1', () => {
			const { port: bound } = server.address();
			server.close(() => resolve(bound));
		});
	});
}

/** A loopback port that was free a moment ago: `preferred` or the next free one after it, else any. */
async function freePort(preferred = 0) {
	if (preferred) {
		for (let port = preferred; port < preferred + 50; port++) {
			if (await tryListen(port)) return port;
		}
	}
	const any = await tryListen(0);
	if (!any) throw new Error('no free loopback port');
	return any;
}

/** Every n8n process starts a task broker; parallel processes each need their own port. */
async function withBrokerPort(env) {
	return { N8N_RUNNERS_BROKER_PORT: String(await freePort()), ...env };
}

/**
 * Runs `n8n <args>` to completion. Resolves with everything it printed; never rejects on a
 * non-zero exit (callers decide, and show n8n's own output when they fail).
 * @param {{ nodeBin: string, n8nMain: string }} n8n  the layout from ensureN8n()
 */
async function runN8n(n8n, args, { userFolder, env = {}, timeoutMs = 300_000 }) {
	// `info`: n8n prints command results (e.g. `execute`'s run data) through its logger.
	const extra = await withBrokerPort({ N8N_LOG_LEVEL: 'info', ...env });
	return new Promise((resolve, reject) => {
		const child = spawn(n8n.nodeBin, [n8n.n8nMain, ...args], {
			env: n8nEnvironment({ userFolder, nodeBin: n8n.nodeBin, extra }),
			stdio: ['ignore', 'pipe', 'pipe'],
		});
		let stdout = '';
		let stderr = '';
		child.stdout.on('data', (chunk) => (stdout += chunk));
		child.stderr.on('data', (chunk) => (stderr += chunk));
		const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
		child.on('error', (error) => {
			clearTimeout(timer);
			reject(error);
		});
		child.on('close', (code, signal) => {
			clearTimeout(timer);
			resolve({ args, code, signal, stdout, stderr });
		});
	});
}

/** Like runN8n, but a failure throws with the command and n8n's own output. */
async function runN8nOrThrow(n8n, args, options) {
	const result = await runN8n(n8n, args, options);
	if (result.code !== 0) throw new Error(describeFailure(result));
	return result;
}

function describeFailure({ args, code, signal, stdout, stderr }) {
	return `n8n ${args.join(' ')} failed (${signal ?? `exit ${code}`})\n--- n8n stdout ---\n${stdout}\n--- n8n stderr ---\n${stderr}`;
}

/**
 * Starts `n8n start` (the editor) and resolves once it answers on /healthz/readiness.
 * @returns {Promise<{ url: string, process: import('node:child_process').ChildProcess, output: () => string, stop: () => Promise<void> }>}
 */
async function startEditor(n8n, { userFolder, port, env = {}, onOutput, readyTimeoutMs = 120_000 }) {
	const extra = await withBrokerPort(env);
	const child = spawn(n8n.nodeBin, [n8n.n8nMain, 'start'], {
		env: n8nEnvironment({ userFolder, port, nodeBin: n8n.nodeBin, logLevel: 'info', extra }),
		stdio: ['ignore', 'pipe', 'pipe'],
		detached: false,
	});
	let output = '';
	const collect = (chunk) => {
		output += chunk;
		onOutput?.(String(chunk));
	};
	child.stdout.on('data', collect);
	child.stderr.on('data', collect);
	const url = `http://127.0.0.1:${port}`;
	const stop = () =>
		new Promise((resolve) => {
			if (child.exitCode !== null || child.signalCode !== null) return resolve();
			const force = setTimeout(() => child.kill('SIGKILL'), 20_000);
			child.once('exit', () => {
				clearTimeout(force);
				resolve();
			});
			child.kill('SIGTERM');
		});
	return new Promise((resolve, reject) => {
		const started = Date.now();
		let exited = false;
		child.once('exit', (code, signal) => {
			exited = true;
			reject(new Error(`n8n start exited (${signal ?? `exit ${code}`}) before it was ready\n--- n8n output ---\n${output}`));
		});
		const poll = async () => {
			if (exited) return;
			try {
				const response = await fetch(`${url}/healthz/readiness`);
				if (response.ok) return resolve({ url, process: child, output: () => output, stop });
			} catch {
				// not listening yet
			}
			if (Date.now() - started > readyTimeoutMs) {
				await stop();
				return reject(new Error(`n8n was not ready after ${readyTimeoutMs / 1000} s\n--- n8n output ---\n${output}`));
			}
			setTimeout(poll, 500);
		};
		poll();
	});
}

/**
 * `n8n execute --id <id>` prints the run as pretty JSON among log lines: the object starts at a
 * line that is exactly `{` and ends at the next line that is exactly `}`.
 */
function parseExecuteOutput(stdout) {
	const lines = stdout.split('\n');
	const start = lines.indexOf('{');
	const end = lines.indexOf('}', start);
	if (start < 0 || end < 0) throw new Error(`no run data in n8n's output:\n${stdout}`);
	return JSON.parse(lines.slice(start, end + 1).join('\n'));
}

async function executeWorkflow(n8n, id, options) {
	const result = await runN8n(n8n, ['execute', '--id', id, '--rawOutput'], options);
	try {
		return { run: parseExecuteOutput(result.stdout), result };
	} catch {
		throw new Error(describeFailure(result));
	}
}

module.exports = { describeFailure, executeWorkflow, freePort, parseExecuteOutput, runN8n, runN8nOrThrow, startEditor };
