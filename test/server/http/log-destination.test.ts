/**
 * The log's destination against real descriptors that refuse or stall: /dev/full (every write is
 * ENOSPC) and a FIFO whose reader does not read. Lines are dropped and counted, never thrown, never
 * waited for, never piled up past the bound; the exit's flush tries once; the first line that gets
 * through says how many went and why. (The service on a disk that fills: service/full-log-disk.test.ts.)
 */
import { spawnSync } from 'node:child_process';
import { closeSync, constants, existsSync, mkdtempSync, openSync, readSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LogDestination } from '../../../server/src/http/log-destination';
import { eventually } from '../support/http';

const line = (index: number) => `${JSON.stringify({ level: 30, msg: `line ${index}`, padding: 'x'.repeat(200) })}\n`;

(existsSync('/dev/full') ? it : it.skip)('on /dev/full every line is dropped and counted, and the exit flush does not wait', async () => {
	const fd = openSync('/dev/full', 'w');
	try {
		const destination = new LogDestination(fd);
		for (let index = 0; index < 50; index++) destination.write(line(index));
		expect(await eventually(() => destination.droppedLines === 50, 5_000, 10)).toBe(true);
		for (let index = 50; index < 60; index++) destination.write(line(index));
		const started = performance.now();
		destination.flushSync();
		expect(performance.now() - started).toBeLessThan(100);
		expect(await eventually(() => destination.droppedLines === 60, 5_000, 10)).toBe(true);
	} finally {
		closeSync(fd);
	}
});

it('a reader that stalls makes lines drop past the bound, and once it reads, the count comes first', async () => {
	const directory = mkdtempSync(join(tmpdir(), 'imagegen-log-fifo-'));
	const fifo = join(directory, 'log');
	expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
	const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
	const writer = openSync(fifo, 'w');
	try {
		const bound = 64 * 1024;
		const destination = new LogDestination(writer, bound);
		const lines = 2_000;
		const started = performance.now();
		let accepted = 0;
		for (let index = 0; index < lines; index++) if (destination.write(line(index))) accepted++;
		expect(performance.now() - started).toBeLessThan(500);
		// Taken: what the pipe holds, one write under way and the bound; the rest dropped.
		expect(accepted).toBeLessThan(lines);
		expect(destination.droppedLines).toBe(lines - accepted);

		let read = '';
		const buffer = Buffer.alloc(64 * 1024);
		const drain = () => {
			for (;;) {
				try {
					const bytes = readSync(reader, buffer);
					if (bytes === 0) return;
					read += buffer.subarray(0, bytes).toString();
				} catch (error) {
					if ((error as NodeJS.ErrnoException).code === 'EAGAIN') return;
					throw error;
				}
			}
		};
		// Once the reader reads: the lines taken, in order, and the count of those that were not before the first written after them.
		expect(await eventually(() => (drain(), read.split('\n').length - 1 === accepted + 1), 10_000, 20)).toBe(true);
		const written = read.trimEnd().split('\n').map((text) => JSON.parse(text) as { msg: string; droppedLines?: number });
		const report = written.findIndex((entry) => entry.droppedLines !== undefined);
		expect(written[report]).toMatchObject({ level: 40, droppedLines: lines - accepted, msg: `${lines - accepted} log lines were dropped (last: the destination fell behind)` });
		const indices = written.filter((_, position) => position !== report).map((entry) => Number(entry.msg.split(' ')[1]));
		// The oldest kept, the newest dropped: the loop above never let the pipe move meanwhile.
		expect(indices).toEqual(Array.from({ length: accepted }, (_, index) => index));
	} finally {
		closeSync(writer);
		closeSync(reader);
		rmSync(directory, { recursive: true, force: true });
	}
});
