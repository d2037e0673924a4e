/**
 * Object storage in a directory: `<key>` holds the bytes of a complete object. A stream goes to
 * `.tmp-<key>` in the same directory and is renamed into place when complete, so a reader never
 * sees half an object and a crash leaves only a temp file, which `removeIncomplete` (or the
 * start-up cleanup) deletes. Bytes already in memory (a generated image) are written straight to
 * `<key>` through one descriptor, without the rename's trip to the thread pool (a large share of a
 * small write's CPU): nothing reads an object before its row publishes it, which happens only once
 * the write has resolved, and one cut short by a crash is removed with its reservation at the next
 * start (`removeIncomplete`). Either file is synced, and the directory after it, before the write
 * resolves: the row that publishes an object is synced too, and after a power cut it must not
 * point at a name the disk never got, or at an empty file. Writes that finish while a directory
 * sync is under way share the next one. A write with `synced: false` skips both syncs; a read that
 * names the size it expects finds such an object cut short by a power cut missing, never short.
 */
import { close, createWriteStream, fsync, open as openDescriptor, writeFile } from 'node:fs';
import { promisify } from 'node:util';
import { constants } from 'node:fs';
import { copyFile, mkdir, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ByteCounter, STREAM_HIGH_WATER_MARK } from './byte-streams';
import type { ByteRange, ObjectStorage, ObjectWriteOptions } from './object-storage';

export interface DiskObjectStorageOptions {
	directory: string;
	/** Where bytes are written; replaceable so a full disk can be simulated in tests. */
	openWriteStream?: (path: string) => Writable;
	/** The same for bytes already in memory; `sync`: on the disk before it resolves. */
	writeBytes?: BytesWriter;
}

type BytesWriter = (path: string, bytes: Buffer, options: { signal?: AbortSignal; sync: boolean }) => Promise<void>;

export const TEMP_PREFIX = '.tmp-';
const openFd = promisify(openDescriptor);
const syncFd = promisify(fsync);
const closeFd = promisify(close);
// Keys are our own `<id>.<ext>` names; anything else (a path, a dot file) is refused outright.
const KEY = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,200}$/;

export class DiskObjectStorage implements ObjectStorage {
	readonly engine = 'disk' as const;
	readonly directory: string;
	private readonly openWriteStream: (path: string) => Writable;
	private readonly writeBytes: BytesWriter;
	private readonly directorySync: SharedSync;
	/** The directory's descriptor, opened by the first sync and kept until `close`. */
	private directoryFd: Promise<number> | undefined;

	constructor(options: DiskObjectStorageOptions) {
		this.directory = options.directory;
		this.openWriteStream = options.openWriteStream ?? ((path) => createWriteStream(path, { flags: 'wx', mode: 0o644, highWaterMark: STREAM_HIGH_WATER_MARK }));
		this.writeBytes = options.writeBytes ?? writeAndSync;
		this.directorySync = new SharedSync(() => this.syncDirectory());
	}

	async close(): Promise<void> {
		const fd = await this.directoryFd?.catch(() => undefined);
		this.directoryFd = undefined;
		if (fd !== undefined) await closeFd(fd);
	}

	/**
	 * Through a descriptor kept open, so a sync is one trip to the thread pool instead of three
	 * (open, sync, close). A plain descriptor, not a FileHandle: one left open by a caller that never
	 * closes the storage is not closed by the garbage collector with a warning.
	 */
	private async syncDirectory(): Promise<void> {
		this.directoryFd ??= openFd(this.directory, 'r');
		const fd = await this.directoryFd.catch((error: unknown) => {
			this.directoryFd = undefined;
			throw error;
		});
		await syncFd(fd);
	}

	async init(): Promise<void> {
		await mkdir(this.directory, { recursive: true });
	}

	async write(key: string, source: Readable | Buffer, options: ObjectWriteOptions): Promise<number> {
		// The caller learns why it aborted (its own reason), as from every other driver.
		options.signal?.throwIfAborted();
		const sync = options.synced !== false;
		const inMemory = Buffer.isBuffer(source);
		const target = inMemory ? this.path(key) : this.tempPath(key);
		try {
			const size = inMemory ? await this.writeBuffer(target, source, options.signal, sync) : await this.writeStream(target, source, options.signal, sync);
			if (!inMemory) await rename(target, this.path(key));
			if (sync) await this.directorySync.run();
			return size;
		} catch (error) {
			// Only a file this write made: `wx` opens no name that exists already.
			if ((error as NodeJS.ErrnoException).code !== 'EEXIST') await removeQuietly(target);
			throw options.signal?.aborted ? options.signal.reason : error;
		}
	}

	async writeLocalFile(key: string, path: string, options: ObjectWriteOptions): Promise<number> {
		options.signal?.throwIfAborted();
		const target = this.tempPath(key);
		try {
			// A copy made by the kernel: a video of hundreds of MB never passes through JavaScript buffers.
			await copyFile(path, target, constants.COPYFILE_FICLONE);
			if (options.synced !== false) await syncToDisk(target);
			await rename(target, this.path(key));
			if (options.synced !== false) await this.directorySync.run();
			return (await stat(this.path(key))).size;
		} catch (error) {
			await removeQuietly(target);
			throw options.signal?.aborted ? options.signal.reason : error;
		}
	}

	/** Bytes in memory (a generated image) go down in one write, without a stream's machinery. */
	private async writeBuffer(path: string, bytes: Buffer, signal: AbortSignal | undefined, sync: boolean): Promise<number> {
		await this.writeBytes(path, bytes, { ...(signal ? { signal } : {}), sync });
		return bytes.length;
	}

	private async writeStream(path: string, source: Readable, signal: AbortSignal | undefined, sync: boolean): Promise<number> {
		const counter = new ByteCounter();
		await pipeline(source, counter, this.openWriteStream(path), signal ? { signal } : {});
		if (sync) await syncToDisk(path);
		return counter.bytes;
	}

	async read(key: string, range?: ByteRange, expect?: { size: number }): Promise<Readable | null> {
		// The handle is opened first: a sweep that unlinks the file during a download cannot cut it short.
		const handle = await open(this.path(key), 'r').catch(() => null);
		if (!handle) return null;
		if (expect && (await handle.stat()).size !== expect.size) {
			await handle.close();
			return null;
		}
		return handle.createReadStream({ start: range?.start, end: range?.end, autoClose: true });
	}

	localPath(key: string): string {
		return this.path(key);
	}

	async delete(keys: readonly string[]): Promise<void> {
		await Promise.all(keys.map((key) => removeQuietly(this.path(key))));
	}

	async removeIncomplete(key: string): Promise<void> {
		await Promise.all([removeQuietly(this.tempPath(key)), removeQuietly(this.path(key))]);
	}

	/**
	 * Deletes temp files and objects that `keep` does not claim, once older than `olderThanMs`
	 * (-1: all of them). Answers the names of the entries it deleted.
	 */
	async removeOrphans(keep: (key: string) => boolean | Promise<boolean>, options: { olderThanMs: number; now: number }): Promise<string[]> {
		const entries = await readdir(this.directory).catch(() => [] as string[]);
		const removed: string[] = [];
		for (const entry of entries) {
			const key = entry.startsWith(TEMP_PREFIX) ? entry.slice(TEMP_PREFIX.length) : entry;
			if (await keep(key)) continue;
			const path = join(this.directory, entry);
			const info = await stat(path).catch(() => null);
			if (!info || options.now - info.mtimeMs <= options.olderThanMs) continue;
			if (await unlink(path).then(() => true, () => false)) removed.push(entry);
		}
		return removed;
	}

	private path(key: string): string {
		if (!KEY.test(key)) throw new Error(`invalid storage key '${key}'`);
		return join(this.directory, key);
	}

	private tempPath(key: string): string {
		if (!KEY.test(key)) throw new Error(`invalid storage key '${key}'`);
		return join(this.directory, `${TEMP_PREFIX}${key}`);
	}
}

/**
 * fsync through a descriptor of our own: it writes back every dirty page of the file, whoever
 * wrote them (a stream's, written through another). A directory's sync makes the names created or
 * renamed in it durable.
 */
async function syncToDisk(path: string): Promise<void> {
	const handle = await open(path, 'r');
	try {
		await handle.sync();
	} finally {
		await handle.close();
	}
}

/**
 * A new file holding `bytes`, synced through the descriptor that wrote them when `sync` is set
 * (`flush`). One call of the callback API: its open, writes, sync and close cost the event loop
 * less than through a FileHandle, whose every step is a promise of its own.
 */
const writeAndSync: BytesWriter = promisify((path: string, bytes: Buffer, options: { signal?: AbortSignal; sync: boolean }, done: (error: Error | null) => void) =>
	writeFile(path, bytes, { flag: 'wx', mode: 0o644, flush: options.sync, ...(options.signal ? { signal: options.signal } : {}) }, done),
);

/**
 * One sync for every caller that asks while none is under way; one that asks during a sync waits
 * for the next, which starts once that one ended: each caller's sync starts after its own call.
 */
export class SharedSync {
	private current: Promise<void> | null = null;
	private next: Promise<void> | null = null;

	constructor(private readonly sync: () => Promise<void>) {}

	run(): Promise<void> {
		if (!this.current) return this.start();
		this.next ??= this.current
			.catch(() => undefined)
			.then(() => {
				this.next = null;
				return this.start();
			});
		return this.next;
	}

	private start(): Promise<void> {
		const running = this.sync().finally(() => {
			if (this.current === running) this.current = null;
		});
		this.current = running;
		return running;
	}
}

async function removeQuietly(path: string): Promise<void> {
	await unlink(path).catch(() => undefined);
}
