/**
 * runFfmpeg runs the packaged ffmpeg with an argument array: it resolves when ffmpeg succeeds,
 * names what failed with the tail of ffmpeg's stderr when it does not, and kills the process when
 * the caller's signal aborts or its time runs out, leaving no ffmpeg behind.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ffmpegPath, runFfmpeg } from '../../../server/src/media/ffmpeg';

jest.setTimeout(30_000);

let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'ffmpeg-'));
});
afterAll(async () => {
	await rm(root, { recursive: true, force: true });
});

/** ffmpeg processes this test process started that are still running. */
async function ffmpegChildren(): Promise<string[]> {
	const { stdout } = await promisify(execFile)('ps', ['-o', 'pid=,comm=', '--ppid', String(process.pid)]).catch(() => ({ stdout: '' }));
	return stdout.split('\n').filter((line) => /\bffmpeg\b/.test(line));
}

async function until(condition: () => Promise<boolean>): Promise<void> {
	for (let tries = 0; !(await condition()); tries++) {
		if (tries > 200) throw new Error('condition never held');
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
}

/** A run that would take minutes: an hour of test pattern encoded for nothing. */
const endless = ['-f', 'lavfi', '-i', 'testsrc=size=640x360:rate=25:duration=3600', '-c:v', 'libx264', '-f', 'null', '-'];

describe('runFfmpeg', () => {
	test('the package’s binary runs and writes what it is asked to', async () => {
		expect(ffmpegPath()).toMatch(/ffmpeg$/);
		const out = join(root, 'frame.png');
		await runFfmpeg(['-f', 'lavfi', '-i', 'color=c=red:size=32x16', '-frames:v', '1', '-y', out], { what: 'draw a frame' });
		expect((await stat(out)).size).toBeGreaterThan(0);
	});

	test('a failure names what failed, how ffmpeg ended and its last words, bounded', async () => {
		// Thirty inputs, each described on stderr, then an output ffmpeg cannot write (an MP4 into a pipe).
		const inputs = Array.from({ length: 30 }, () => ['-f', 'lavfi', '-i', 'testsrc=size=16x16:duration=1']).flat();
		const args = [...inputs, '-f', 'mp4', 'pipe:1'];
		const error: Error = await runFfmpeg(args, { what: 'write to a pipe' }).then(
			() => {
				throw new Error('it should have failed');
			},
			(thrown: Error) => thrown,
		);
		expect(error.message).toMatch(/^ffmpeg could not write to a pipe \(it exited with code 1\): /);
		expect(error.message).toMatch(/Conversion failed!$/);
		expect(error.message).toContain('Input #29, lavfi');
		expect(error.message).not.toContain('Input #0, lavfi');
		expect(error.message.length).toBeLessThan(4_200);
	});

	test('an unknown option is an error too, not a silent success', async () => {
		await expect(runFfmpeg(['-no-such-option'], { what: 'start' })).rejects.toThrow(/^ffmpeg could not start \(it exited with code 1\): .*no-such-option/s);
	});

	test('an abort kills ffmpeg at once and rejects with the abort’s reason', async () => {
		const controller = new AbortController();
		const reason = new Error('canceled');
		const running = runFfmpeg(endless, { what: 'encode for an hour', signal: controller.signal });
		await until(async () => (await ffmpegChildren()).length === 1);
		const started = Date.now();
		controller.abort(reason);
		await expect(running).rejects.toBe(reason);
		expect(Date.now() - started).toBeLessThan(1_000);
		expect(await ffmpegChildren()).toStrictEqual([]);
	});

	test('an already aborted signal starts nothing', async () => {
		const reason = new Error('gone');
		await expect(runFfmpeg(endless, { what: 'encode', signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
		expect(await ffmpegChildren()).toStrictEqual([]);
	});

	test('running out of time kills ffmpeg with an error saying so', async () => {
		await expect(runFfmpeg(endless, { what: 'encode for an hour', timeoutMs: 300 })).rejects.toThrow('ffmpeg could not encode for an hour: it took longer than 300 ms');
		expect(await ffmpegChildren()).toStrictEqual([]);
	});
});
