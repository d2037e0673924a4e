/**
 * The clock that judges key expiry, rotation grace and budget periods: the key store's own
 * (PostgreSQL: the database's), so replicas whose clocks drift apart still agree on whether a key
 * has expired and which day a reservation belongs to. The store's time is asked once a minute and kept
 * as an offset from this machine's clock, so a request costs no extra round trip.
 */
import type { KeyStore } from './key-store';

const REFRESH_MS = 60_000;

export class StoreClock {
	private offset: Promise<number> | null = null;
	private measuredAt = 0;

	constructor(
		private readonly store: Pick<KeyStore, 'now'>,
		private readonly refreshMs = REFRESH_MS,
	) {}

	async now(): Promise<Date> {
		return new Date(Date.now() + (await this.currentOffset()));
	}

	private currentOffset(): Promise<number> {
		const read = this.store.now?.bind(this.store);
		if (!read) return Promise.resolve(0);
		if (this.offset && Date.now() - this.measuredAt < this.refreshMs) return this.offset;
		this.measuredAt = Date.now();
		const asked = Date.now();
		const offset = read().then((storeNow) => storeNow.getTime() - (asked + Date.now()) / 2);
		this.offset = offset;
		// A failed reading (database down) is not kept: the next request asks again.
		offset.catch(() => {
			if (this.offset === offset) this.offset = null;
		});
		return offset;
	}
}
