/**
 * The service log `npm start` promises (scripts/start-service.cjs, used by scripts/start.mjs):
 * everything the service writes lands in the file, from its start-up banner to its shutdown.
 * The built CLI on loopback, no n8n.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SERVER_CLI } from '../helpers/server';
import { eventually } from '../server/support/http';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startService } = require('../../scripts/start-service.cjs') as {
	startService(options: { cli: string; args: string[]; logFile: string; onExit?: (code: number | null) => void }): Promise<{
		origin: string;
		stop(): Promise<void>;
		logClosed: Promise<void>;
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
	const service = await startService({ cli: SERVER_CLI, args: args(join(folder, 'data')), logFile });
	expect((await fetch(`${service.origin}/healthz`)).status).toBe(200);
	await service.stop();
	await service.logClosed;
	const log = readFileSync(logFile, 'utf8');
	expect(log).toContain(`imagegen-server listening on ${service.origin}`);
	expect(log).toContain(`"msg":"bound ${service.origin}"`);
	expect(log).toMatch(/"msg":"received SIGTERM/);
});

test('a service that cannot start: the reason is in the error and in the log file', async () => {
	const logFile = join(folder, 'imagegen-server.log');
	await expect(startService({ cli: SERVER_CLI, args: [...args(join(folder, 'data')), '--port', 'not-a-port'], logFile })).rejects.toThrow(/exited \(2\) before it was ready:[\s\S]*--port/);
	expect(await eventually(() => /--port/.test(readFileSync(logFile, 'utf8')), 5_000)).toBe(true);
});
