/**
 * Object storage in a directory: `<key>` holds the bytes of a complete object. A write goes to
 * `.tmp-<key>` in the same directory and is renamed into place when complete, so a reader never
 * sees half an object and a crash leaves only a temp file, which `removeIncomplete` (or the
 * start-up cleanup) deletes. The temp file is synced before the rename and the directory after it,
 * and only then does the write resolve: the row that publishes an object is synced too, and after
 * a power cut it must not point at a name the disk never got, or at an empty file. A write with
 * `synced: false` skips both syncs (2 opens, 2 fsyncs, 2 closes on the thread pool); a read that
 * names the size it expects finds such an object cut short by a power cut missing, never short.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, open, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ByteCounter, STREAM_HIGH_WATER_MARK } from './byte-streams';
import type { ByteRange, ObjectStorage, ObjectWriteOptions } from './object-storage';

export interface DiskObjectStorageOptions {
	directory: string;
	/** Where bytes are written; replaceable so a full disk can be simulated in tests. */
	openWriteStream?: (path: string) => Writable;
	/** The same for bytes already in memory. */
	writeBytes?: (path: string, bytes: Buffer, signal?: AbortSignal) => Promise<void>;
}

export const TEMP_PREFIX = '.tmp-';
// Keys are our own `<id>.<ext>` names; anything else (a path, a dot file) is refused outright.
const KEY = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,200}$/;

export class DiskObjectStorage implements ObjectStorage {
	readonly driver = 'disk' as const;
	readonly directory: string;
	private readonly openWriteStream: (path: string) => Writable;
	private readonly writeBytes: (path: string, bytes: Buffer, signal?: AbortSignal) => Promise<void>;

	constructor(options: DiskObjectStorageOptions) {
		this.directory = options.directory;
		this.openWriteStream = options.openWriteStream ?? ((path) => createWriteStream(path, { flags: 'wx', mode: 0o644, highWaterMark: STREAM_HIGH_WATER_MARK }));
		this.writeBytes = options.writeBytes ?? ((path, bytes, signal) => writeFile(path, bytes, { flag: 'wx', mode: 0o644, ...(signal ? { signal } : {}) }));
	}

	async init(): Promise<void> {
		await mkdir(this.directory, { recursive: true });
	}

	async write(key: string, source: Readable | Buffer, options: ObjectWriteOptions): Promise<number> {
		// The caller learns why it aborted (its own reason), as from every other driver.
		options.signal?.throwIfAborted();
		const temp = this.tempPath(key);
		try {
			const size = Buffer.isBuffer(source) ? await this.writeBuffer(temp, source, options.signal) : await this.writeStream(temp, source, options.signal);
			if (options.synced !== false) await syncToDisk(temp);
			await rename(temp, this.path(key));
			if (options.synced !== false) await syncToDisk(this.directory);
			return size;
		} catch (error) {
			await removeQuietly(temp);
			throw options.signal?.aborted ? options.signal.reason : error;
		}
	}

	/** Bytes in memory (a generated image) go down in one write, without a stream's machinery. */
	private async writeBuffer(path: string, bytes: Buffer, signal: AbortSignal | undefined): Promise<number> {
		await this.writeBytes(path, bytes, signal);
		return bytes.length;
	}

	private async writeStream(path: string, source: Readable, signal: AbortSignal | undefined): Promise<number> {
		const counter = new ByteCounter();
		await pipeline(source, counter, this.openWriteStream(path), signal ? { signal } : {});
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
	async removeOrphans(keep: (key: string) => boolean, options: { olderThanMs: number; now: number }): Promise<string[]> {
		const entries = await readdir(this.directory).catch(() => [] as string[]);
		const removed: string[] = [];
		for (const entry of entries) {
			const key = entry.startsWith(TEMP_PREFIX) ? entry.slice(TEMP_PREFIX.length) : entry;
			if (keep(key)) continue;
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
 * wrote them. For a directory, it makes the names created or renamed in it durable.
 */
async function syncToDisk(path: string): Promise<void> {
	const handle = await open(path, 'r');
	try {
		await handle.sync();
	} finally {
		await handle.close();
	}
}

async function removeQuietly(path: string): Promise<void> {
	await unlink(path).catch(() => undefined);
}
