/**
 * File metadata for one process: `<id>.json` beside the bytes, holding the FileRecord. Writing it
 * publishes the file; without it the bytes are never served. Reservations live in memory: one
 * process owns the data dir, so a reservation can only outlive its writer if the whole process
 * died, and then the start-up cleanup removes what the writer left.
 */
import { writeFile as writeFileCallback } from 'node:fs';
import { mkdir, readFile, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { ExpiredEntry, FileMetadataStore, FileRecord, FileReservation, PublishOptions } from './file-metadata';

// The callback form writes through a plain descriptor; the promise form wraps each write in a
// FileHandle object, which costs a measurable share of a busy service's main thread.
const writeFile = promisify(writeFileCallback);
const ID = /^[A-Za-z0-9_-]{16,64}$/;
const SUFFIX = '.json';

export interface EmbeddedFileMetadataOptions {
	directory: string;
	/** A metadata file that does not parse and is older than this is a crash leftover. */
	staleAfterMs?: number;
	now?: () => number;
}

export class EmbeddedFileMetadata implements FileMetadataStore {
	readonly directory: string;
	private readonly reservations = new Map<string, FileReservation>();
	private readonly staleAfterMs: number;
	private readonly now: () => number;
	private sweeping = false;

	constructor(options: EmbeddedFileMetadataOptions) {
		this.directory = options.directory;
		this.staleAfterMs = options.staleAfterMs ?? 15 * 60_000;
		this.now = options.now ?? Date.now;
	}

	async init(): Promise<void> {
		await mkdir(this.directory, { recursive: true });
	}

	/** Metadata files share the directory with the bytes; the object storage must leave them alone. */
	static isMetadataFile(name: string): boolean {
		return name.endsWith(SUFFIX);
	}

	async reserve(reservation: FileReservation): Promise<void> {
		if (this.reservations.has(reservation.id)) throw new Error(`file id ${reservation.id} is already reserved`);
		const expiresAt = reservation.lifetimeMs === undefined ? reservation.expiresAt : new Date(this.now() + reservation.lifetimeMs);
		this.reservations.set(reservation.id, { ...reservation, expiresAt });
	}

	/**
	 * Needs no temp file and rename: the id is fresh, so no reader asks for it before this returns,
	 * and a half-written file left by a crash does not parse, which leaves the file unpublished.
	 */
	async publish(file: FileRecord, options: PublishOptions = {}): Promise<FileRecord> {
		if (!this.reservations.has(file.id)) throw new Error(`file id ${file.id} has no open reservation to publish`);
		const createdAt = options.lifetimeMs === undefined ? file.createdAt : new Date(this.now());
		const expiresAt = options.lifetimeMs === undefined ? file.expiresAt : new Date(createdAt.getTime() + options.lifetimeMs);
		const stored = { ...file, createdAt, expiresAt };
		await writeFile(this.path(file.id), JSON.stringify(stored), { flag: 'wx' });
		this.reservations.delete(file.id);
		return stored;
	}

	async release(id: string): Promise<void> {
		this.reservations.delete(id);
		await unlink(this.path(id)).catch(() => undefined);
	}

	async get(id: string, now: Date = new Date(this.now())): Promise<FileRecord | null> {
		if (!ID.test(id)) return null;
		const file = await this.read(this.path(id));
		if (!file || file.expiresAt.getTime() <= now.getTime()) return null;
		return file;
	}

	async remove(id: string, ownerKeyId: string, now?: Date): Promise<FileRecord | null> {
		const file = await this.get(id, now);
		if (!file || file.ownerKeyId !== ownerKeyId) return null;
		// Without its metadata the file is gone for every reader; bytes left by a crash right after
		// this are orphans, which the leftover cleanup removes.
		await unlink(this.path(id)).catch(() => undefined);
		return file;
	}

	/**
	 * Expired published files only: an in-memory reservation belongs to a writer that is still
	 * running (however slow), since a dead writer took the memory with it.
	 */
	async sweepExpired(dispose: (batch: ExpiredEntry[]) => Promise<void>, options: { now?: Date; batchSize: number }): Promise<number> {
		if (!Number.isInteger(options.batchSize) || options.batchSize < 1) throw new RangeError(`batchSize must be a positive integer; got ${options.batchSize}`);
		if (this.sweeping) return 0;
		this.sweeping = true;
		try {
			const now = (options.now ?? new Date(this.now())).getTime();
			const entries = await readdir(this.directory).catch(() => [] as string[]);
			let batch: ExpiredEntry[] = [];
			let disposed = 0;
			const flush = async () => {
				if (batch.length === 0) return;
				const current = batch;
				batch = [];
				await dispose(current);
				await Promise.all(current.map((entry) => unlink(this.path(entry.id)).catch(() => undefined)));
				disposed += current.length;
			};
			for (const entry of entries) {
				if (!entry.endsWith(SUFFIX)) continue;
				const id = entry.slice(0, -SUFFIX.length);
				const path = join(this.directory, entry);
				const file = await this.read(path);
				if (!file) {
					// Half-written by a crash: never published, so only the metadata file itself goes;
					// its bytes are then orphans for the leftover cleanup.
					if (await this.isStale(path, now)) await unlink(path).catch(() => undefined);
					continue;
				}
				if (file.expiresAt.getTime() > now) continue;
				batch.push({ id, storageKey: file.storageKey, published: true });
				if (batch.length >= options.batchSize) await flush();
			}
			await flush();
			return disposed;
		} finally {
			this.sweeping = false;
		}
	}

	/**
	 * Which storage keys are accounted for: those of a metadata file present now, and those
	 * reserved by a running write. Everything else in the directory is a leftover.
	 */
	async claimedKeys(): Promise<(key: string) => boolean> {
		const entries = await readdir(this.directory).catch(() => [] as string[]);
		const ids = new Set(entries.filter((entry) => entry.endsWith(SUFFIX)).map((entry) => entry.slice(0, -SUFFIX.length)));
		const reserved = new Set([...this.reservations.values()].map((reservation) => reservation.storageKey));
		// Our keys are `<id>.<ext>`; the id alone identifies the metadata file.
		return (key) => reserved.has(key) || ids.has(key.split('.')[0]!);
	}

	/** Removes metadata files that do not parse (a crash mid-write); used at start, when all are leftovers. */
	async removeUnreadable(olderThanMs: number): Promise<number> {
		const now = this.now();
		let removed = 0;
		for (const entry of await readdir(this.directory).catch(() => [] as string[])) {
			if (!entry.endsWith(SUFFIX)) continue;
			const path = join(this.directory, entry);
			const file = await this.read(path);
			if (file || !(await this.isStale(path, now, olderThanMs))) continue;
			await unlink(path).catch(() => undefined);
			removed++;
		}
		return removed;
	}

	/** The record, or null when missing or unreadable (half-written by a crash). */
	private async read(path: string): Promise<FileRecord | null> {
		try {
			return parseRecord(await readFile(path, 'utf8'));
		} catch {
			return null;
		}
	}

	private async isStale(path: string, now: number, olderThanMs = this.staleAfterMs): Promise<boolean> {
		const info = await stat(path).catch(() => null);
		return info !== null && now - info.mtimeMs > olderThanMs;
	}

	private path(id: string): string {
		if (!ID.test(id)) throw new Error(`invalid file id '${id}'`);
		return join(this.directory, `${id}${SUFFIX}`);
	}
}

/** Records written before owners and storage keys existed read as the key-less, name-keyed files they were. */
function parseRecord(text: string): FileRecord {
	const raw = JSON.parse(text) as Record<string, unknown>;
	const file = {
		...(raw as unknown as FileRecord),
		storageKey: typeof raw.storageKey === 'string' ? raw.storageKey : String(raw.name),
		ownerKeyId: typeof raw.ownerKeyId === 'string' ? raw.ownerKeyId : '',
		createdAt: new Date(String(raw.createdAt)),
		expiresAt: new Date(String(raw.expiresAt)),
	};
	if (typeof file.id !== 'string' || typeof file.name !== 'string' || typeof file.size !== 'number' || Number.isNaN(file.expiresAt.getTime())) {
		throw new Error('malformed metadata');
	}
	return file;
}
