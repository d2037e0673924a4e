/**
 * Managed keys as the auth hook sees them: looked up by the SHA-256 of the presented secret and
 * remembered for at most `ttlMs` (0.5 s by default), so a revocation, block or rotation made on
 * any replica is refused by every replica within a second, while a busy key costs one lookup per
 * interval. Concurrent lookups of one secret share one query.
 */
import type { KeyStore } from './key-store';
import type { ManagedKey } from './managed-key';

/** Unknown secrets are remembered too (a client retrying a wrong key); bounded so they cannot fill memory. */
const MAX_ENTRIES = 10_000;

interface Entry {
	until: number;
	key: Promise<ManagedKey | null>;
}

export class ManagedKeyCache {
	private readonly entries = new Map<string, Entry>();

	constructor(
		private readonly store: Pick<KeyStore, 'findBySecretHash'>,
		private readonly ttlMs = 500,
		private readonly now: () => number = Date.now,
	) {}

	lookup(hash: string): Promise<ManagedKey | null> {
		const at = this.now();
		const cached = this.entries.get(hash);
		if (cached && cached.until > at) return cached.key;
		if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
		const key = this.store.findBySecretHash(hash);
		const entry = { until: at + this.ttlMs, key };
		this.entries.set(hash, entry);
		// A failed lookup (database down) is not remembered: the next request asks again.
		key.catch(() => {
			if (this.entries.get(hash) === entry) this.entries.delete(hash);
		});
		return key;
	}

	/** After a change made by this process: its own next request sees it at once. */
	clear(): void {
		this.entries.clear();
	}
}
