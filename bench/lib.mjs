// Shared pieces of the benchmarks: processes started as a user would, peak memory from /proc,
// percentiles and a printed table. Everything listens on 127.0.0.1 only.
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const SERVER_CLI = join(ROOT, 'server', 'dist', 'server', 'src', 'cli.js');
export const SERVER_BIN = join(ROOT, 'server', 'bin', 'imagegen-server.js');
export const API_KEY = 'bench-key-0123456789';

/** Starts a Node script (under `node`, default this one) and resolves once it prints `listening on http://…`. */
export function startProcess(script, args = [], env = {}, node = process.execPath) {
	return startListening(node, [script, ...args], env, script);
}

function startListening(command, args, env, script) {
	return new Promise((resolve, reject) => {
		const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
		let output = '';
		const onData = (chunk) => {
			output += chunk;
			const match = /listening on (http:\/\/[^\s]+)/.exec(output);
			if (match) {
				child.stdout.off('data', onData);
				resolve({
					origin: match[1].replace(/\/$/, ''),
					pid: child.pid,
					stop: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGTERM')))),
				});
			}
		};
		child.stdout.on('data', onData);
		child.stderr.on('data', (chunk) => (output += chunk));
		child.once('exit', (code) => reject(new Error(`${script} exited with ${code}:\n${output}`)));
	});
}

/** A throwaway PostgreSQL cluster (the test suites' runner): answers its URL and a stop function. */
export function startPostgres() {
	const child = spawn(process.execPath, [join(ROOT, 'test', 'server', 'support', 'postgres-process.mjs')], { stdio: ['pipe', 'pipe', 'inherit'] });
	return new Promise((resolve, reject) => {
		let output = '';
		child.stdout.on('data', (chunk) => {
			output += chunk;
			if (!output.includes('\n')) return;
			const { port, password } = JSON.parse(output.split('\n')[0]);
			resolve({
				url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
				stop: () => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.stdin.end()))),
			});
		});
		child.once('exit', (code) => reject(new Error(`PostgreSQL runner exited with ${code}`)));
	});
}

/**
 * imagegen-server as users start it: its bin, run by the `node` on PATH it finds (`node`, default
 * this one), which gives the process its start settings (server/bin/imagegen-server.js).
 * `plainNode: true` starts `node cli.js` instead, without them. The pid is the service's own
 * either way (`env` and the bin replace themselves, never start a child).
 */
export function startImagegenServer(dataDir, args = [], env = {}, node = process.execPath, { plainNode = false } = {}) {
	const serverArgs = ['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--api-keys', API_KEY, '--rate-limit-per-minute', '0', '--log-level', 'warn', ...args];
	if (plainNode) return startProcess(SERVER_CLI, serverArgs, env, node);
	return startListening(SERVER_BIN, serverArgs, { ...env, PATH: `${dirname(node)}${delimiter}${process.env.PATH ?? ''}` }, SERVER_BIN);
}

/** Resident memory of a process now (VmRSS), in bytes. */
export function residentBytes(pid) {
	const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
	return match ? Number(match[1]) * 1024 : NaN;
}

/** Peak resident memory of a process so far (VmHWM), in MiB. */
export function peakRssMb(pid) {
	const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
	return match ? Number(match[1]) / 1024 : NaN;
}

/** CPU time a process has used so far, all its threads, user and system (Linux clock ticks of 10 ms). */
export function cpuTimeMs(pid) {
	const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
	return (Number(fields[11]) + Number(fields[12])) * 10;
}

export function percentile(sorted, p) {
	return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function machine() {
	const cpu = /model name\s*:\s*(.+)/.exec(readFileSync('/proc/cpuinfo', 'utf8'))?.[1] ?? 'unknown CPU';
	const cores = readFileSync('/proc/cpuinfo', 'utf8').split('\n').filter((line) => line.startsWith('processor')).length;
	const memory = Math.round(Number(/MemTotal:\s+(\d+)/.exec(readFileSync('/proc/meminfo', 'utf8'))?.[1] ?? 0) / 1024 / 1024);
	return `${cpu}, ${cores} cores, ${memory} GiB RAM, Node ${process.version}`;
}

export function table(rows) {
	const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => String(row[column]).length)));
	return rows.map((row) => row.map((cell, column) => String(cell).padEnd(widths[column])).join('  ')).join('\n');
}

export const round = (value, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;

/** The row saying whether peak memory stayed flat (< 20 MB apart) from the 100 MiB run to the 1 GiB one; none without both. */
export function flatPeakRows(label, [small, large], field) {
	if (!small || !large) return [];
	const growth = round(large[field] - small[field], 1);
	return [[`${label} peak RSS, 1 GiB minus 100 MiB`, `${growth} MB`, '', '', 'flat (< 20 MB)', Math.abs(growth) < 20 ? 'yes' : 'NO']];
}

/**
 * Streams `source` (a readable of `size` bytes) as a multipart form with part `file` to
 * `url`, as a client uploading a video would; answers the seconds until the 200 arrived.
 */
export function postMultipartFile(url, source, size) {
	const boundary = 'bench-boundary-7d3f';
	const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="clip.mp4"\r\nContent-Type: video/mp4\r\n\r\n`);
	const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
	return new Promise((resolve, reject) => {
		const started = process.hrtime.bigint();
		const request = http.request(url, {
			method: 'POST',
			headers: { authorization: `Bearer ${API_KEY}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': head.length + size + tail.length },
		});
		request.on('response', (response) => {
			let body = '';
			response.on('data', (chunk) => (body += chunk));
			response.on('end', () => {
				if (response.statusCode !== 200) return reject(new Error(`upload answered ${response.statusCode}: ${body}`));
				resolve(Number(process.hrtime.bigint() - started) / 1e9);
			});
		});
		request.on('error', reject);
		request.write(head);
		source.pipe(request, { end: false });
		source.on('end', () => request.end(tail));
	});
}

/**
 * POST /v1/images/generations at `url` for a fixed time (autocannon's timestamps have whole-second
 * resolution): requests per second, latency and the failed count, with `key` as the bearer; with
 * the server's `pid`, its CPU time per answered request too; `headers` and body `fields` are sent besides.
 */
export async function generationLoad(url, { key = API_KEY, responseFormat = 'b64_json', connections, seconds, pid, headers = {}, fields = {} }) {
	const cpuBefore = pid === undefined ? 0 : cpuTimeMs(pid);
	const run = await autocannon({
		url,
		method: 'POST',
		connections,
		duration: seconds,
		headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
		body: JSON.stringify({ model: 'p-image', prompt: 'A lighthouse at dawn', aspect_ratio: '1:1', response_format: responseFormat, ...fields }),
	});
	const answered = run['2xx'] + run.non2xx;
	// With `pid`, what the server spent per answered request, across all its threads.
	const cpuMsPerRequest = pid === undefined || answered === 0 ? undefined : round((cpuTimeMs(pid) - cpuBefore) / answered, 3);
	return { rps: round(run.requests.total / seconds, 1), p50Ms: run.latency.p50, p99Ms: run.latency.p99, ok: run['2xx'], errors: run.errors + run.timeouts + run.non2xx, cpuMsPerRequest };
}
