/**
 * The built CLI with its standard output — the log — on a disk that is full: a file on a small
 * tmpfs that fills while the service runs (support/small-file-system.ts), and /dev/full, where
 * every write fails with ENOSPC from the first line on. Each request still answers at once, the
 * process keeps running, a line that cannot be written is dropped and counted (the first line
 * written once there is room says how many), and SIGTERM still stops it cleanly.
 *
 * Each generation here fails on purpose (its host is a closed port: 502) because a failed request
 * is what the service logs, one line each.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVER_CLI, TEST_API_KEY } from '../../helpers/server';
import { closedPort } from '../support/closed-port';
import { eventually } from '../support/http';
import { useSmallFileSystem } from '../support/small-file-system';

jest.setTimeout(90_000);

/** What "at once" means for a request on a loaded two-core machine: the freeze it replaces lasted minutes. */
const PROMPT_MS = 3_000;
const REQUESTS = 10;

const disk = useSmallFileSystem(2);
const running: ChildProcess[] = [];
const dataDirs: string[] = [];

afterEach(() => {
	for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
	for (const dataDir of dataDirs.splice(0)) rmSync(dataDir, { recursive: true, force: true });
});

interface Service {
	child: ChildProcess;
	origin: string;
	stderr(): string;
}

/** The CLI with its stdout on `stdoutFd`; ready once /healthz answers (its printed lines may be lost). */
async function startLoggingTo(stdoutFd: number): Promise<Service> {
	const [port, hostPort] = [await closedPort(), await closedPort()];
	const dataDir = mkdtempSync(join(tmpdir(), 'imagegen-full-log-'));
	dataDirs.push(dataDir);
	const args = ['--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--api-keys', TEST_API_KEY];
	const failingHost = ['--providers', 'p-image=upstream', '--upstream-base-url', `http://127.0.0.1:${hostPort}/v1`];
	const child = spawn(process.execPath, [SERVER_CLI, ...args, ...failingHost], { stdio: ['ignore', stdoutFd, 'pipe'], env: { ...process.env, UPSTREAM_API_KEY: 'unused' } });
	running.push(child);
	let stderr = '';
	child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
	const origin = `http://127.0.0.1:${port}`;
	const up = await eventually(async () => child.exitCode === null && (await fetch(`${origin}/healthz`).then((answer) => answer.ok, () => false)), 20_000, 200);
	if (!up) throw new Error(`the service did not come up (exit ${child.exitCode}):\n${stderr}`);
	return { child, origin, stderr: () => stderr };
}

/** A generation whose host cannot be reached: its status and how long the answer took. */
async function failingGeneration(origin: string): Promise<{ status: number | string; ms: number }> {
	const started = performance.now();
	const status = await fetch(`${origin}/v1/images/generations`, {
		method: 'POST',
		headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json' },
		body: JSON.stringify({ model: 'p-image', prompt: 'a quiet street' }),
		signal: AbortSignal.timeout(2 * PROMPT_MS),
	}).then(
		(answer) => answer.status,
		(error: Error) => error.name,
	);
	return { status, ms: Math.round(performance.now() - started) };
}

async function expectPromptAnswers(service: Service): Promise<void> {
	const answers = [];
	// Stopped at the first that is not a prompt 502: a frozen service would take the suite's time otherwise.
	for (let index = 0; index < REQUESTS; index++) {
		const answer = await failingGeneration(service.origin);
		answers.push(answer);
		if (answer.status !== 502 || answer.ms >= PROMPT_MS) break;
	}
	expect(answers.map(({ status }) => status)).toEqual(Array(REQUESTS).fill(502));
	expect(Math.max(...answers.map(({ ms }) => ms))).toBeLessThan(PROMPT_MS);
	expect({ exitCode: service.child.exitCode, signal: service.child.signalCode }).toEqual({ exitCode: null, signal: null });
}

/** SIGTERM: the exit's last flush must not wait for a disk that stays full. */
async function expectCleanStop(service: Service): Promise<void> {
	const exited = new Promise<number | null>((resolve) => service.child.once('exit', (code) => resolve(code)));
	const started = performance.now();
	service.child.kill('SIGTERM');
	let timer: NodeJS.Timeout | undefined;
	const stuck = new Promise((resolve) => (timer = setTimeout(() => resolve('still running after 10 s'), 10_000)));
	expect(await Promise.race([exited, stuck])).toBe(0);
	clearTimeout(timer);
	expect(performance.now() - started).toBeLessThan(PROMPT_MS + 2_000);
}

disk.it('a log file whose disk fills: requests answer at once, lost lines are counted once there is room, and SIGTERM stops it', async () => {
	const logFile = join(disk.path!, 'service.log');
	const fd = openSync(logFile, 'a');
	let filler: string | undefined;
	try {
		const service = await startLoggingTo(fd);
		const logged = readFileSync(logFile, 'utf8').split('\n').filter((line) => line.endsWith('"msg":"request failed"}')).length;
		filler = disk.fill('filler');
		await expectPromptAnswers(service);
		// A line or two may still fit in the log file's own last page, which it had partly used.
		const written = readFileSync(logFile, 'utf8').split('\n').filter((line) => line.endsWith('"msg":"request failed"}')).length - logged;
		expect(written).toBeLessThan(REQUESTS);

		rmSync(filler);
		filler = undefined;
		expect((await failingGeneration(service.origin)).status).toBe(502);
		const reported = () => readFileSync(logFile, 'utf8').split('\n').find((line) => line.includes('"droppedLines"'));
		expect(await eventually(() => reported() !== undefined, 5_000)).toBe(true);
		const report = JSON.parse(reported()!) as { droppedLines: number; msg: string };
		expect(report.droppedLines).toBe(REQUESTS - written);
		expect(report.msg).toBe(`${report.droppedLines} log lines were dropped (last: ENOSPC)`);
		// The line that came with the room: the request that failed after the disk had room again.
		expect(readFileSync(logFile, 'utf8').trimEnd().split('\n').at(-1)).toContain('"msg":"request failed"');

		filler = disk.fill('filler');
		await expectCleanStop(service);
		expect(service.stderr()).toBe('');
	} finally {
		closeSync(fd);
		if (filler && existsSync(filler)) rmSync(filler);
	}
});

(existsSync('/dev/full') ? it : it.skip)('stdout on /dev/full from the first line: the service starts, answers at once and stops cleanly', async () => {
	const fd = openSync('/dev/full', 'w');
	try {
		const service = await startLoggingTo(fd);
		await expectPromptAnswers(service);
		await expectCleanStop(service);
		expect(service.stderr()).toBe('');
	} finally {
		closeSync(fd);
	}
});
