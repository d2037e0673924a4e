/**
 * The service log `npm start` promises (scripts/start-service.cjs, used by scripts/start.mjs):
 * everything the service writes lands in the file, from its start-up banner to its shutdown.
 * The service is started as users start it, by its bin, with the memory settings the bin gives it.
 * The built CLI on loopback, no n8n.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVER_BIN } from '../helpers/node-versions';
import { eventually } from '../server/support/http';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startService } = require('../../scripts/start-service.cjs') as {
	startService(options: { bin: string; args: string[]; logFile: string; onExit?: (code: number | null) => void }): Promise<{
		origin: string;
		stop(): Promise<void>;
		logClosed: Promise<void>;
		process: ChildProcess;
	}>;
};

let folder: string;
beforeEach(() => {
	folder = mkdtempSync(join(tmpdir(), 'imagegen-start-log-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const args = (dataDir: string) => ['--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir];

test('the log file holds the start-up lines, and the shutdown, of the service', async () => {
	const logFile = join(folder, 'imagegen-server.log');
	const service = await startService({ bin: SERVER_BIN, args: args(join(folder, 'data')), logFile });
	expect((await fetch(`${service.origin}/healthz`)).status).toBe(200);
	await service.stop();
	await service.logClosed;
	const log = readFileSync(logFile, 'utf8');
	expect(log).toContain(`imagegen-server listening on ${service.origin}`);
	expect(log).toContain(`"msg":"bound ${service.origin}"`);
	expect(log).toMatch(/"msg":"received SIGTERM/);
	// The last word of a clean stop says so, and how long the drain took.
	const lastLine = log.trimEnd().split('\n').at(-1) ?? '';
	expect(lastLine).toMatch(/"msg":"stopped: requests in flight drained in \d+(\.\d+)? s"/);
});

test('a service that cannot start: the reason is in the error and in the log file', async () => {
	const logFile = join(folder, 'imagegen-server.log');
	await expect(startService({ bin: SERVER_BIN, args: [...args(join(folder, 'data')), '--port', 'not-a-port'], logFile })).rejects.toThrow(/exited \(2\) before it was ready:[\s\S]*--port/);
	expect(await eventually(() => /--port/.test(readFileSync(logFile, 'utf8')), 5_000)).toBe(true);
});

test('the service runs under this Node, with the start settings the bin gives it', async () => {
	const service = await startService({ bin: SERVER_BIN, args: args(join(folder, 'data')), logFile: join(folder, 'imagegen-server.log') });
	try {
		// The bin replaced itself with the same Node and its settings: the child's pid is the service's own process.
		const pid = service.process.pid!;
		const commandLine = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
		const environment = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
		expect(readlinkSync(`/proc/${pid}/exe`)).toBe(realpathSync(process.execPath));
		expect(commandLine.slice(1, 3)).toEqual(['--max-semi-space-size=4', SERVER_BIN]);
		expect(environment).toContain('MALLOC_ARENA_MAX=2');
	} finally {
		await service.stop();
	}
});
