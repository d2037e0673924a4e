/**
 * Where managed keys and their spend live: one store (sql-key-store.ts) on PostgreSQL for a fleet
 * or on the data dir's SQLite database otherwise, passing test/server/support/key-store-contract.ts
 * on both.
 *
 * Budgets: a generation's price is reserved on the key's spend at its admission (admitted only
 * while spent + price ≤ limit, atomically for every process and replica), then settled at the
 * actual cost when it succeeds or released when it fails. A generation in flight is therefore
 * spend that every process sees, with nothing to expire: a process or replica that dies
 * mid-generation leaves its reservation, so a key never spends past its budget (at worst it pays
 * for a generation cut off by the crash), and a generation however slow can always be settled.
 */
import type { KeySettings, ManagedKey } from './managed-key';

/** The settings a change was sent with; the others stay as they are in the store. */
export type KeyPatch = Partial<KeySettings>;

export interface Reservation {
	/** Unique per generation. */
	id: string;
	keyId: string;
	amountUsd: number;
	limitUsd: number;
	/** Charges of this instant's UTC day and later count against the limit (the budget period's start). */
	since: Date;
}

/** A refusal says what the period holds: spend, generations in flight included. */
export type Admission = { admitted: true } | { admitted: false; spentUsd: number };

export interface KeyStore {
	create(key: ManagedKey): Promise<void>;
	/** Keys not revoked, oldest first; `includeRevoked` adds the revoked ones (usage reports). */
	list(options?: { includeRevoked?: boolean }): Promise<ManagedKey[]>;
	/** A key that is not revoked. */
	get(id: string): Promise<ManagedKey | null>;
	/**
	 * Writes the patch's settings of a key that is not revoked, in one statement, leaving every other
	 * setting as the store holds it (a concurrent change of another field is kept); null when there is none.
	 */
	update(id: string, patch: KeyPatch): Promise<ManagedKey | null>;
	/** False when there was no such key (or it was revoked already). */
	revoke(id: string, at: Date): Promise<boolean>;
	/** Installs a new secret; the current one stays valid until `previousValidUntil` (null: at once invalid). */
	rotate(id: string, secret: { hash: string; prefix: string }, previousValidUntil: Date | null): Promise<ManagedKey | null>;
	/** The key, revoked or not, whose current or previous secret has this hash. */
	findBySecretHash(hash: string): Promise<ManagedKey | null>;
	/** Reserves the amount on `now`'s UTC day only while spent + amount ≤ limit, atomically for every caller of the store. */
	reserve(reservation: Reservation, now?: Date): Promise<Admission>;
	/** The generation succeeded: its reservation becomes spend of `amountUsd` (the actual cost). */
	settle(reservationId: string, amountUsd: number): Promise<void>;
	/** The generation failed: its reservation is given back. */
	release(reservationId: string): Promise<void>;
	/** Spend of a key since an instant's UTC day, generations in flight included. */
	spent(keyId: string, since: Date): Promise<number>;
	/** The store's clock, where it is not this machine's (PostgreSQL: the database's); see store-clock.ts. */
	now?(): Promise<Date>;
	close?(): Promise<void>;
}
