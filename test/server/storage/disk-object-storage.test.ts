/**
 * Hosted bytes are on the disk before the row that publishes them: each write syncs its file, then
 * the directory, and only then resolves. A stream (multipart uploads) is written to a temp file
 * renamed into place; bytes held in memory (generated images, JSON uploads) go straight to their
 * name, since no row publishes them before the write resolves.
 *
 * Seen from outside the process: the built driver runs in a child under strace, which reports the
 * system calls in the order they finished; a sync of another descriptor or a rename without one
 * shows there as it would on the disk.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { buffer } from 'node:stream/consumers';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DiskObjectStorage, SharedSync } from '../../../server/src/storage/disk-object-storage';
import { SERVER_CLI } from '../../helpers/server';

const DRIVER = join(SERVER_CLI, '..', 'storage', 'disk-object-storage.js');
const straceAvailable = spawnSync('strace', ['-V']).status === 0;

let directory = '';
beforeEach(() => {
	directory = join(mkdtempSync(join(tmpdir(), 'imagegen-disk-sync-')), 'files');
});
afterEach(() => rmSync(join(directory, '..'), { recursive: true, force: true }));

type Event = { call: 'sync' | 'rename' | 'written'; path: string };

const BUFFER_AND_STREAM = `
	await storage.write('buffered.png', Buffer.alloc(4096, 1), { contentType: 'image/png' });
	mark('written-buffered.png');
	await storage.write('streamed.mp4', Readable.from([Buffer.alloc(70000, 2), Buffer.alloc(70000, 3)]), { contentType: 'video/mp4' });
	mark('written-streamed.mp4');
`;

/** Runs `writes` (one buffer and one stream by default) through the driver; answers the calls that matter, in order. */
function traceWrites(writes = BUFFER_AND_STREAM): Event[] {
	const script = `
		const { DiskObjectStorage } = require(${JSON.stringify(DRIVER)});
		const { Readable } = require('node:stream');
		const { accessSync } = require('node:fs');
		const { join } = require('node:path');
		// A failing access() of a named path marks in the trace the moment a write resolved.
		const mark = (name) => { try { accessSync(join(${JSON.stringify(directory)}, name)); } catch {} };
		(async () => {
			const storage = new DiskObjectStorage({ directory: ${JSON.stringify(directory)} });
			await storage.init();
			${writes}
		})().catch((error) => { console.error(error); process.exit(1); });
	`;
	const traced = spawnSync('strace', ['-f', '-qq', '-y', '-e', 'trace=fsync,fdatasync,rename,renameat,renameat2,access,faccessat,faccessat2', process.execPath, '-e', script], {
		encoding: 'utf8',
	});
	expect(traced.status).toBe(0);
	return parseTrace(traced.stderr);
}

/** strace prints a call that another thread interrupted as `<unfinished ...>`, then `<... resumed>`: the latter is when it finished. */
function parseTrace(trace: string): Event[] {
	const events: Event[] = [];
	const unfinished = new Map<string, string>();
	for (const line of trace.split('\n')) {
		const pid = /^\[pid\s+(\d+)\]/.exec(line)?.[1] ?? 'main';
		const body = line.replace(/^\[pid\s+\d+\]\s*/, '');
		if (body.includes('<unfinished ...>')) {
			unfinished.set(pid, body);
			continue;
		}
		const call = /^<\.\.\. \w+ resumed>/.test(body) ? `${unfinished.get(pid) ?? ''}${body}` : body;
		const sync = /^f(?:data)?sync\(\d+<([^>]+)>/.exec(call);
		if (sync && / = 0\s*$/.test(call)) events.push({ call: 'sync', path: sync[1]! });
		const rename = /^rename(?:at2?)?\((?:[^,]+, )?"([^"]+)", (?:[^,]+, )?"([^"]+)"/.exec(call);
		if (rename && / = 0\s*$/.test(call)) events.push({ call: 'rename', path: `${rename[1]} -> ${rename[2]}` });
		const access = /^(?:access|faccessat2?)\((?:[^,]+, )?"[^"]*\/(written-[^"]+)"/.exec(call);
		if (access) events.push({ call: 'written', path: access[1]! });
	}
	return events;
}

function eventIndex(events: Event[], call: Event['call'], path: string): number {
	const index = events.findIndex((event) => event.call === call && event.path === path);
	if (index < 0) throw new Error(`no ${call} of ${path} in ${JSON.stringify(events)}`);
	return index;
}

/** The directory's sync after `from`, which must come before the write of `key` resolved. */
function expectDirectorySynced(events: Event[], from: number, key: string): void {
	const directorySynced = events.findIndex((event, index) => index > from && event.call === 'sync' && event.path === directory);
	expect(directorySynced).toBeGreaterThan(from);
	expect(directorySynced).toBeLessThan(eventIndex(events, 'written', `written-${key}`));
}

(straceAvailable ? it : it.skip)("syncs a stream's temp file before the rename and the directory after it, before the write resolves", () => {
	const events = traceWrites();
	const renamed = eventIndex(events, 'rename', `${directory}/.tmp-streamed.mp4 -> ${directory}/streamed.mp4`);
	expect(eventIndex(events, 'sync', `${directory}/.tmp-streamed.mp4`)).toBeLessThan(renamed);
	expectDirectorySynced(events, renamed, 'streamed.mp4');
});

(straceAvailable ? it : it.skip)('writes bytes in memory straight to their name, synced and then the directory, before the write resolves', () => {
	const events = traceWrites();
	expect(events.some((event) => event.call === 'rename' && event.path.includes('buffered.png'))).toBe(false);
	expectDirectorySynced(events, eventIndex(events, 'sync', `${directory}/buffered.png`), 'buffered.png');
});

(straceAvailable ? it : it.skip)('writes with synced: false without a sync of the file or its directory', () => {
	const events = traceWrites(`
		await storage.write('unsynced.png', Buffer.alloc(4096, 1), { contentType: 'image/png', synced: false });
		mark('written-unsynced.png');
		await storage.write('unsynced.mp4', Readable.from([Buffer.alloc(70000, 2)]), { contentType: 'video/mp4', synced: false });
		mark('written-unsynced.mp4');
	`);
	expect(events).toEqual([
		{ call: 'written', path: 'written-unsynced.png' },
		{ call: 'rename', path: `${directory}/.tmp-unsynced.mp4 -> ${directory}/unsynced.mp4` },
		{ call: 'written', path: 'written-unsynced.mp4' },
	]);
});

it('syncs the directory through one descriptor of its own, kept from the first sync until close', async () => {
	const descriptorsOn = (path: string) => readdirSync('/proc/self/fd').filter((fd) => {
		try {
			return readlinkSync(`/proc/self/fd/${fd}`) === path;
		} catch {
			return false;
		}
	}).length;
	const storage = new DiskObjectStorage({ directory });
	await storage.init();
	expect(descriptorsOn(directory)).toBe(0);
	for (const key of ['a.png', 'b.png', 'c.png']) await storage.write(key, Buffer.alloc(4096, 1), { contentType: 'image/png' });
	expect(descriptorsOn(directory)).toBe(1);
	await storage.close();
	expect(descriptorsOn(directory)).toBe(0);
	await storage.write('d.png', Buffer.alloc(4096, 1), { contentType: 'image/png' });
	expect(descriptorsOn(directory)).toBe(1);
	await storage.close();
});

it('a write of bytes in memory that fails leaves nothing behind, and never removes an object it did not make', async () => {
	const failing = new DiskObjectStorage({ directory, writeBytes: async (path) => {
		writeFileSync(path, 'half');
		throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
	} });
	await failing.init();
	await expect(failing.write('cut.png', Buffer.alloc(4096, 1), { contentType: 'image/png' })).rejects.toThrow(/no space/);
	expect(readdirSync(directory)).toEqual([]);

	const storage = new DiskObjectStorage({ directory });
	await storage.write('kept.png', Buffer.alloc(4096, 1), { contentType: 'image/png' });
	await expect(storage.write('kept.png', Buffer.alloc(10, 2), { contentType: 'image/png' })).rejects.toMatchObject({ code: 'EEXIST' });
	expect(readdirSync(directory)).toEqual(['kept.png']);
	expect((await buffer((await storage.read('kept.png'))!)).length).toBe(4096);
	await storage.close();
});

it('a read that names the size it expects finds an object of another size (cut short by a power cut) missing', async () => {
	const storage = new DiskObjectStorage({ directory });
	await storage.init();
	await storage.write('whole.png', Buffer.alloc(4096, 1), { contentType: 'image/png', synced: false });
	writeFileSync(join(directory, 'short.png'), Buffer.alloc(0));
	expect(await storage.read('short.png', undefined, { size: 4096 })).toBeNull();
	const unchecked = await storage.read('short.png');
	expect(unchecked).not.toBeNull();
	unchecked!.destroy();
	const whole = await storage.read('whole.png', undefined, { size: 4096 });
	expect((await buffer(whole!)).length).toBe(4096);
});

describe('SharedSync', () => {
	/** A sync that ends when the test says so; records which callers had called when it started. */
	function controlledSync() {
		const started: Array<{ callers: number; end: () => void }> = [];
		let callers = 0;
		const shared = new SharedSync(() => new Promise<void>((resolve) => started.push({ callers, end: resolve })));
		const call = () => {
			callers += 1;
			return shared.run();
		};
		return { started, call };
	}

	it('shares one sync among the callers that ask while another is under way, started after the last of them asked', async () => {
		const { started, call } = controlledSync();
		const first = call();
		const waiting = [call(), call(), call()];
		expect(started).toHaveLength(1);
		started[0]!.end();
		await first;
		await new Promise((resolve) => setImmediate(resolve));
		// The three that asked during the first sync share the second, which started after all of them.
		expect(started).toHaveLength(2);
		expect(started[1]!.callers).toBe(4);
		const later = call();
		started[1]!.end();
		await Promise.all(waiting);
		await new Promise((resolve) => setImmediate(resolve));
		// One that asked during the second is not answered by it.
		expect(started).toHaveLength(3);
		started[2]!.end();
		await later;
	});

	it('answers a failed sync to its callers, and the next caller gets a sync of its own', async () => {
		let fail = true;
		let syncs = 0;
		const shared = new SharedSync(async () => {
			syncs += 1;
			if (fail) throw new Error('EIO');
		});
		await expect(Promise.all([shared.run(), shared.run()])).rejects.toThrow('EIO');
		fail = false;
		await shared.run();
		expect(syncs).toBe(3);
	});
});
