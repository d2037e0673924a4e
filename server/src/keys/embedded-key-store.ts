/**
 * Managed keys for one process, in the data dir: `keys.json` holds the keys (rewritten whole into
 * a temp file, synced and renamed, so a crash leaves the old or the new file, never half of one) and
 * `key-charges.jsonl` the settled spend (append-only; a torn last line is skipped on load).
 * Reservations in flight live in memory: one process admits them, so admission is atomic by
 * JavaScript's single thread. `keys.json` is re-read when it changes on disk, so keys made by
 * `imagegen-server keys …` while the service runs are seen by it.
 */
import { appendFile, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { ModelId } from '../../../core/models';
import { replaceWithLines } from '../durable/replace-with-lines';
import type { Admission, KeyStore, Reservation } from './key-store';
import { fromMicros, toMicros, type KeySettings, type ManagedKey } from './managed-key';

export const KEYS_FILE = 'keys.json';
export const CHARGES_FILE = 'key-charges.jsonl';

interface StoredKey {
	id: string;
	name: string;
	prefix: string;
	secretHash: string;
	previousSecretHash: string | null;
	previousValidUntil: string | null;
	createdAt: string;
	expiresAt: string | null;
	blocked: boolean;
	revokedAt: string | null;
	models: string[] | null;
	rateLimitPerMinute: number | null;
	budget: { limitUsd: number; period: string } | null;
}

interface ChargeLine {
	id: string;
	key: string;
	usd: number;
	at: string;
}

interface Held {
	keyId: string;
	micros: number;
	at: Date;
	leaseUntil: number;
}

export class EmbeddedKeyStore implements KeyStore {
	private keys = new Map<string, ManagedKey>();
	/** What keys.json looked like when last read or written: a change means another process wrote it. */
	private seen = '';
	/** keyId → UTC day (YYYY-MM-DD) → settled micro-dollars. */
	private readonly spend = new Map<string, Map<string, number>>();
	private readonly reservations = new Map<string, Held>();
	private writes: Promise<void> = Promise.resolve();

	private constructor(private readonly dataDir: string) {}

	static async open(dataDir: string): Promise<EmbeddedKeyStore> {
		const store = new EmbeddedKeyStore(dataDir);
		await store.reloadIfChanged();
		const text = await readFile(join(dataDir, CHARGES_FILE), 'utf8').catch(ignoreMissing(''));
		const counted = new Set<string>();
		for (const raw of text.split('\n')) {
			const line = parseCharge(raw);
			if (!line || counted.has(line.id)) continue;
			counted.add(line.id);
			store.addSpend(line.key, line.at.slice(0, 10), toMicros(line.usd));
		}
		return store;
	}

	private get keysFile(): string {
		return join(this.dataDir, KEYS_FILE);
	}

	async create(key: ManagedKey): Promise<void> {
		await this.mutate(() => {
			if (this.keys.has(key.id)) throw new Error(`key ${key.id} exists already`);
			this.keys.set(key.id, { ...key });
		});
	}

	async list(options: { includeRevoked?: boolean } = {}): Promise<ManagedKey[]> {
		await this.reloadIfChanged();
		return [...this.keys.values()]
			.filter((key) => options.includeRevoked || key.revokedAt === null)
			.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id))
			.map(copy);
	}

	async get(id: string): Promise<ManagedKey | null> {
		await this.reloadIfChanged();
		const key = this.keys.get(id);
		return key && key.revokedAt === null ? copy(key) : null;
	}

	async update(id: string, settings: KeySettings): Promise<ManagedKey | null> {
		return this.mutate(() => {
			const key = this.keys.get(id);
			if (!key || key.revokedAt !== null) return null;
			Object.assign(key, copySettings(settings));
			return copy(key);
		});
	}

	async revoke(id: string, at: Date): Promise<boolean> {
		return this.mutate(() => {
			const key = this.keys.get(id);
			if (!key || key.revokedAt !== null) return false;
			key.revokedAt = at;
			return true;
		});
	}

	async rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null> {
		return this.mutate(() => {
			const key = this.keys.get(id);
			if (!key || key.revokedAt !== null) return null;
			key.previousSecretHash = previousValidUntil ? key.secretHash : null;
			key.previousValidUntil = previousValidUntil;
			key.secretHash = secret.hash;
			key.prefix = secret.prefix;
			return copy(key);
		});
	}

	async findBySecretHash(hash: string): Promise<ManagedKey | null> {
		await this.reloadIfChanged();
		for (const key of this.keys.values()) {
			if (key.secretHash === hash || key.previousSecretHash === hash) return copy(key);
		}
		return null;
	}

	async reserve(reservation: Reservation, now: Date = new Date()): Promise<Admission> {
		const sinceDay = reservation.since.toISOString().slice(0, 10);
		const spent = this.spentMicros(reservation.keyId, sinceDay);
		let reserved = 0;
		for (const held of this.reservations.values()) {
			if (held.keyId === reservation.keyId && held.leaseUntil > now.getTime() && held.at >= reservation.since) reserved += held.micros;
		}
		const amount = toMicros(reservation.amountUsd);
		if (spent + reserved + amount > toMicros(reservation.limitUsd)) {
			return { admitted: false, spentUsd: fromMicros(spent), reservedUsd: fromMicros(reserved) };
		}
		this.reservations.set(reservation.id, { keyId: reservation.keyId, micros: amount, at: now, leaseUntil: reservation.leaseUntil.getTime() });
		return { admitted: true };
	}

	async settle(reservationId: string, amountUsd: number): Promise<void> {
		const held = this.reservations.get(reservationId);
		if (!held) return;
		const line: ChargeLine = { id: reservationId, key: held.keyId, usd: amountUsd, at: held.at.toISOString() };
		// Counted at once (the next admission must see it), durable before the answer leaves.
		this.reservations.delete(reservationId);
		this.addSpend(held.keyId, line.at.slice(0, 10), toMicros(amountUsd));
		await this.enqueue(() => appendFile(join(this.dataDir, CHARGES_FILE), `${JSON.stringify(line)}\n`, { mode: 0o600 }));
	}

	async release(reservationId: string): Promise<void> {
		this.reservations.delete(reservationId);
	}

	async spent(keyId: string, since: Date): Promise<number> {
		if (since.getTime() <= 0) return fromMicros(this.spentMicros(keyId, '0000-00-00'));
		// Charges of other processes (none while this one serves the data dir) need no reload.
		return fromMicros(this.spentMicros(keyId, since.toISOString().slice(0, 10)));
	}

	async close(): Promise<void> {
		await this.writes;
	}

	private spentMicros(keyId: string, sinceDay: string): number {
		let total = 0;
		for (const [day, micros] of this.spend.get(keyId) ?? []) if (day >= sinceDay) total += micros;
		return total;
	}

	private addSpend(keyId: string, day: string, micros: number): void {
		const days = this.spend.get(keyId) ?? new Map<string, number>();
		this.spend.set(keyId, days);
		days.set(day, (days.get(day) ?? 0) + micros);
	}

	/** Applies a change to the freshest keys and writes them; serialized, so changes never overwrite each other. */
	private mutate<T>(change: () => T): Promise<T> {
		let result!: T;
		return this.enqueue(async () => {
			await this.reloadIfChanged();
			result = change();
			await this.writeKeys();
		}).then(() => result);
	}

	private async writeKeys(): Promise<void> {
		const stored: StoredKey[] = [...this.keys.values()].map(toStored);
		// The CLI's `keys` commands write too, from another process: each writer has its own temp file.
		await replaceWithLines(this.keysFile, [JSON.stringify({ version: 1, keys: stored }, null, '\t')], `${this.keysFile}.${process.pid}.${Date.now()}.tmp`);
		this.seen = await this.signature();
	}

	private async reloadIfChanged(): Promise<void> {
		const signature = await this.signature();
		if (signature === this.seen) return;
		const text = await readFile(this.keysFile, 'utf8').catch(ignoreMissing(undefined));
		const keys = new Map<string, ManagedKey>();
		if (text !== undefined) {
			let parsed: { keys?: unknown };
			try {
				parsed = JSON.parse(text) as { keys?: unknown };
			} catch (error) {
				throw new Error(`${this.keysFile} is not valid JSON: ${(error as Error).message}`, { cause: error });
			}
			for (const entry of Array.isArray(parsed.keys) ? (parsed.keys as StoredKey[]) : []) keys.set(entry.id, fromStored(entry));
		}
		this.keys = keys;
		this.seen = signature;
	}

	private async signature(): Promise<string> {
		const info = await stat(this.keysFile).catch(ignoreMissing(undefined));
		return info ? `${info.ino}:${info.size}:${info.mtimeMs}` : 'none';
	}

	private enqueue(write: () => Promise<void>): Promise<void> {
		const next = this.writes.then(write);
		this.writes = next.catch(() => undefined);
		return next;
	}
}

function ignoreMissing<T>(fallback: T) {
	return (error: NodeJS.ErrnoException): T => {
		if (error.code === 'ENOENT') return fallback;
		throw error;
	};
}

function copySettings(settings: KeySettings): KeySettings {
	return {
		name: settings.name,
		expiresAt: settings.expiresAt,
		blocked: settings.blocked,
		models: settings.models ? [...settings.models] : null,
		rateLimitPerMinute: settings.rateLimitPerMinute,
		budget: settings.budget ? { ...settings.budget } : null,
	};
}

function copy(key: ManagedKey): ManagedKey {
	return { ...key, ...copySettings(key) };
}

const isoOrNull = (date: Date | null) => (date ? date.toISOString() : null);
const dateOrNull = (text: string | null) => (text ? new Date(text) : null);

function toStored(key: ManagedKey): StoredKey {
	return {
		id: key.id,
		name: key.name,
		prefix: key.prefix,
		secretHash: key.secretHash,
		previousSecretHash: key.previousSecretHash,
		previousValidUntil: isoOrNull(key.previousValidUntil),
		createdAt: key.createdAt.toISOString(),
		expiresAt: isoOrNull(key.expiresAt),
		blocked: key.blocked,
		revokedAt: isoOrNull(key.revokedAt),
		models: key.models,
		rateLimitPerMinute: key.rateLimitPerMinute,
		budget: key.budget,
	};
}

function fromStored(stored: StoredKey): ManagedKey {
	return {
		id: stored.id,
		name: stored.name,
		prefix: stored.prefix,
		secretHash: stored.secretHash,
		previousSecretHash: stored.previousSecretHash,
		previousValidUntil: dateOrNull(stored.previousValidUntil),
		createdAt: new Date(stored.createdAt),
		expiresAt: dateOrNull(stored.expiresAt),
		blocked: stored.blocked,
		revokedAt: dateOrNull(stored.revokedAt),
		models: stored.models as ModelId[] | null,
		rateLimitPerMinute: stored.rateLimitPerMinute,
		budget: stored.budget as ManagedKey['budget'],
	};
}

function parseCharge(raw: string): ChargeLine | undefined {
	if (!raw.trim()) return undefined;
	try {
		const line = JSON.parse(raw) as ChargeLine;
		const valid = typeof line.id === 'string' && typeof line.key === 'string' && Number.isFinite(line.usd) && typeof line.at === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(line.at);
		return valid ? line : undefined;
	} catch {
		return undefined;
	}
}
