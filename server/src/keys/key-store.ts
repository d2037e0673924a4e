/**
 * Where managed keys and their spend live: PostgreSQL for a fleet (pg-key-store.ts), the data
 * dir's SQLite database otherwise (sqlite-key-store.ts). Both pass test/server/support/key-store-contract.ts.
 *
 * Spend is kept as charges: a generation reserves its price before it runs (admitted only while
 * spent + reserved + price ≤ limit, atomically), then the reservation is settled with the actual
 * cost or released when the generation failed. SQLite keeps reservations as rows with a lease (one
 * left by a process that died stops counting when its lease ends); PostgreSQL charges them as spend
 * at once and refunds a release, so a replica that dies mid-generation leaves its charge and the
 * key never overspends.
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
	/** Charges at or after this instant count against the limit (the budget period's start). */
	since: Date;
	/** Until when an unsettled reservation counts, where an engine keeps reservations apart from spend. */
	leaseUntil: Date;
}

export type Admission = { admitted: true } | { admitted: false; spentUsd: number; reservedUsd: number };

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
	/** Admits a charge only while spent + reserved + amount ≤ limit, atomically for every caller of the store. */
	reserve(reservation: Reservation, now?: Date): Promise<Admission>;
	/** Turns a reservation into spend of `amountUsd` (the actual cost). */
	settle(reservationId: string, amountUsd: number): Promise<void>;
	/** Forgets a reservation: the generation failed and costs nothing. */
	release(reservationId: string): Promise<void>;
	/** Settled spend of a key since an instant. */
	spent(keyId: string, since: Date): Promise<number>;
	/** The store's clock, where it is not this machine's (PostgreSQL: the database's); see store-clock.ts. */
	now?(): Promise<Date>;
	close?(): Promise<void>;
}
