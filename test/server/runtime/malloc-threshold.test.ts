/**
 * The service runs with glibc's mmap threshold fixed (server/src/runtime/malloc-threshold.ts): its CLI
 * restarts itself in place with the variable set, unless the operator set it. Every supported Node
 * has `process.execve` (22.15 and later, 24): `npm test` runs this file under both lines.
 */
import { readFileSync } from 'node:fs';
import { MMAP_THRESHOLD_BYTES, MMAP_THRESHOLD_VARIABLE, wantsFixedMmapThreshold } from '../../../server/src/runtime/malloc-threshold';
import { startServer, type RunningServer } from '../../helpers/server';

jest.setTimeout(60_000);

/** The environment the process runs with now: /proc shows what its last exec was given. */
function environmentOf(pid: number): Map<string, string> {
	const entries = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
	return new Map(entries.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
}

let server: RunningServer | undefined;
afterEach(async () => {
	await server?.stop({ removeData: true });
	server = undefined;
});

it('the service process, same pid, runs with the threshold fixed at glibc’s default and still answers', async () => {
	expect(process.env[MMAP_THRESHOLD_VARIABLE]).toBeUndefined();
	server = await startServer();
	expect(environmentOf(server.process.pid!).get(MMAP_THRESHOLD_VARIABLE)).toBe(String(MMAP_THRESHOLD_BYTES));
	const response = await fetch(`${server.baseUrl}/models`, { headers: { authorization: `Bearer ${server.apiKey}` } });
	expect(response.status).toBe(200);
});

it('an operator’s own threshold is kept', async () => {
	server = await startServer({ env: { [MMAP_THRESHOLD_VARIABLE]: '262144' } });
	expect(environmentOf(server.process.pid!).get(MMAP_THRESHOLD_VARIABLE)).toBe('262144');
});

it('only the service is restarted: the one-shot commands and an operator’s own setting are left alone', () => {
	expect(wantsFixedMmapThreshold(undefined, {})).toBe(true);
	expect(wantsFixedMmapThreshold('--port', {})).toBe(true);
	expect(wantsFixedMmapThreshold('keys', {})).toBe(false);
	expect(wantsFixedMmapThreshold('backup', {})).toBe(false);
	expect(wantsFixedMmapThreshold(undefined, { [MMAP_THRESHOLD_VARIABLE]: '262144' })).toBe(false);
});
