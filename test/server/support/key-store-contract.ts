/**
 * What every KeyStore must do, written once and run on both databases
 * (test/server/keys/key-store-sqlite.test.ts, key-store-postgres.test.ts): keys by id and by secret
 * hash, settings, rotation, revocation, and budget reservations that are exact under concurrency.
 */
import { randomUUID } from 'node:crypto';
import type { Admission, KeyStore, Reservation } from '../../../server/src/keys/key-store';
import { newKeyId, newSecret, periodStart, type ManagedKey } from '../../../server/src/keys/managed-key';

export interface KeyStoreHarness {
	/** A store over the harness's backing; called again it stands for a restart or (when `shared`) another replica. */
	open(): Promise<KeyStore>;
	shared: boolean;
	cleanup(): Promise<void>;
}

export function managedKey(overrides: Partial<ManagedKey> = {}): ManagedKey & { secret: string } {
	const secret = newSecret();
	return {
		id: newKeyId(),
		name: 'team a',
		prefix: secret.prefix,
		secretHash: secret.hash,
		previousSecretHash: null,
		previousValidUntil: null,
		createdAt: new Date('2030-01-01T00:00:00Z'),
		expiresAt: null,
		blocked: false,
		revokedAt: null,
		models: null,
		rateLimitPerMinute: null,
		budget: null,
		secret: secret.secret,
		...overrides,
	};
}

export function withoutSecret(key: ManagedKey & { secret: string }): ManagedKey {
	const stored: Partial<ManagedKey & { secret: string }> = { ...key };
	delete stored.secret;
	return stored as ManagedKey;
}

/** What a refusal says is held against the limit: spend, generations in flight included. */
function held(admission: Admission): number {
	if (admission.admitted) throw new Error('expected a refusal');
	return admission.spentUsd;
}

export function describeKeyStoreContract(name: string, factory: () => Promise<KeyStoreHarness>): void {
	describe(`${name}: KeyStore contract`, () => {
		let harness: KeyStoreHarness;
		let store: KeyStore;
		const opened: KeyStore[] = [];
		const open = async () => {
			const next = await harness.open();
			opened.push(next);
			return next;
		};
		const reservation = (keyId: string, overrides: Partial<Reservation> = {}): Reservation => ({
			id: randomUUID(),
			keyId,
			amountUsd: 0.0035,
			limitUsd: 0.01,
			since: periodStart('day', new Date()),
			...overrides,
		});

		beforeEach(async () => {
			harness = await factory();
			store = await open();
		});
		afterEach(async () => {
			for (const each of opened.splice(0)) await each.close?.();
			await harness.cleanup();
		});

		it('keeps a created key, finds it by id and by the hash of its secret, and lists it', async () => {
			const key = managedKey({ models: ['p-image'], rateLimitPerMinute: 5, budget: { limitUsd: 1.5, period: 'month' }, expiresAt: new Date('2031-01-01T00:00:00Z') });
			await store.create(withoutSecret(key));
			expect(await store.get(key.id)).toEqual(withoutSecret(key));
			expect(await store.findBySecretHash(key.secretHash)).toEqual(withoutSecret(key));
			expect(await store.findBySecretHash(newSecret().hash)).toBeNull();
			expect(await store.get(newKeyId())).toBeNull();
			const second = managedKey({ createdAt: new Date('2030-01-02T00:00:00Z') });
			await store.create(withoutSecret(second));
			expect((await store.list()).map((each) => each.id)).toEqual([key.id, second.id]);
		});

		it('survives a restart', async () => {
			const key = managedKey({ budget: { limitUsd: 1, period: 'total' } });
			await store.create(withoutSecret(key));
			const admitted = reservation(key.id, { limitUsd: 1, since: new Date(0) });
			await store.reserve(admitted);
			await store.settle(admitted.id, 0.25);
			await store.close?.();
			opened.splice(opened.indexOf(store), 1);
			const reopened = await open();
			expect(await reopened.get(key.id)).toEqual(withoutSecret(key));
			expect(await reopened.spent(key.id, new Date(0))).toBeCloseTo(0.25, 9);
		});

		it('replaces settings; a revoked key is gone for get, list and update but still found by hash (to refuse it)', async () => {
			const key = managedKey();
			await store.create(withoutSecret(key));
			const updated = await store.update(key.id, {
				name: 'renamed',
				expiresAt: new Date('2032-01-01T00:00:00Z'),
				blocked: true,
				models: ['textimage-v2', 'p-image'],
				rateLimitPerMinute: 7,
				budget: { limitUsd: 3, period: 'day' },
			});
			expect(updated).toMatchObject({ name: 'renamed', blocked: true, models: ['textimage-v2', 'p-image'], rateLimitPerMinute: 7, budget: { limitUsd: 3, period: 'day' } });
			expect(await store.get(key.id)).toEqual(updated);
			expect(await store.revoke(key.id, new Date('2030-02-01T00:00:00Z'))).toBe(true);
			expect(await store.revoke(key.id, new Date())).toBe(false);
			expect(await store.get(key.id)).toBeNull();
			expect(await store.list()).toEqual([]);
			expect((await store.list({ includeRevoked: true })).map((each) => each.id)).toEqual([key.id]);
			expect(await store.update(key.id, { ...updated!, blocked: false })).toBeNull();
			expect((await store.findBySecretHash(key.secretHash))?.revokedAt).toEqual(new Date('2030-02-01T00:00:00Z'));
		});

		it('a patch writes only its own settings: a change of another field by another writer is kept', async () => {
			const key = withoutSecret(managedKey({ budget: { limitUsd: 2, period: 'month' }, models: ['p-image'] }));
			await store.create(key);
			const other = harness.shared ? await open() : store;
			await other.update(key.id, { blocked: true });
			const renamed = await store.update(key.id, { name: 'renamed' });
			expect(renamed).toEqual({ ...key, name: 'renamed', blocked: true });
			expect(await store.update(key.id, { budget: null, models: null })).toEqual({ ...key, name: 'renamed', blocked: true, budget: null, models: null });
			expect(await store.update(key.id, {})).toEqual({ ...key, name: 'renamed', blocked: true, budget: null, models: null });
			expect(await store.update(newKeyId(), { name: 'nobody' })).toBeNull();
		});

		it('rotates: the new secret finds the key, the old one only with a grace time', async () => {
			const key = managedKey();
			await store.create(withoutSecret(key));
			const next = newSecret();
			const until = new Date('2030-01-01T00:05:00Z');
			const rotated = await store.rotate(key.id, next, until);
			expect(rotated).toMatchObject({ id: key.id, prefix: next.prefix, secretHash: next.hash, previousSecretHash: key.secretHash, previousValidUntil: until });
			expect((await store.findBySecretHash(next.hash))?.id).toBe(key.id);
			expect((await store.findBySecretHash(key.secretHash))?.id).toBe(key.id);
			const third = newSecret();
			const again = await store.rotate(key.id, third, null);
			expect(again).toMatchObject({ secretHash: third.hash, previousSecretHash: null, previousValidUntil: null });
			expect(await store.findBySecretHash(next.hash)).toBeNull();
			expect(await store.rotate(newKeyId(), newSecret(), null)).toBeNull();
		});

		it('admits while spent + price fits the limit, generations in flight counted as spent, and tells the spend when not', async () => {
			const key = managedKey();
			await store.create(withoutSecret(key));
			const first = reservation(key.id);
			const second = reservation(key.id);
			expect(await store.reserve(first)).toEqual({ admitted: true });
			expect(await store.reserve(second)).toEqual({ admitted: true });
			// 0.0035 × 3 = 0.0105 > 0.01: the third does not fit while two are in flight.
			expect(await store.spent(key.id, new Date(0))).toBeCloseTo(0.007, 9);
			const refused = await store.reserve(reservation(key.id));
			expect(held(refused)).toBeCloseTo(0.007, 9);
			await store.settle(first.id, 0.0035);
			await store.release(second.id);
			expect(await store.spent(key.id, new Date(0))).toBeCloseTo(0.0035, 9);
			expect(await store.reserve(reservation(key.id))).toEqual({ admitted: true });
			expect(held(await store.reserve(reservation(key.id)))).toBeCloseTo(0.007, 9);
		});

		it('admits exactly to the limit without rounding errors', async () => {
			const key = managedKey();
			await store.create(withoutSecret(key));
			let admitted = 0;
			for (let i = 0; i < 12; i++) {
				const each = reservation(key.id, { limitUsd: 0.035, amountUsd: 0.0035 });
				if ((await store.reserve(each)).admitted) {
					admitted++;
					await store.settle(each.id, 0.0035);
				}
			}
			expect(admitted).toBe(10);
		});

		it('counts only charges of the current period; a released charge stops counting at once', async () => {
			const key = managedKey();
			await store.create(withoutSecret(key));
			const yesterday = new Date(periodStart('day', new Date()).getTime() - 3_600_000);
			const old = reservation(key.id, { since: new Date(0), limitUsd: 1 });
			await store.reserve(old, yesterday);
			await store.settle(old.id, 0.009);
			expect(await store.spent(key.id, periodStart('day', new Date()))).toBe(0);
			expect(await store.spent(key.id, new Date(0))).toBeCloseTo(0.009, 9);
			expect(await store.reserve(reservation(key.id, { amountUsd: 0.01 }))).toEqual({ admitted: true });
			expect((await store.reserve(reservation(key.id, { amountUsd: 0.01 }))).admitted).toBe(false);
			const key2 = managedKey();
			await store.create(withoutSecret(key2));
			const failed = reservation(key2.id, { amountUsd: 0.01 });
			expect(await store.reserve(failed)).toEqual({ admitted: true });
			expect((await store.reserve(reservation(key2.id, { amountUsd: 0.01 }))).admitted).toBe(false);
			await store.release(failed.id);
			expect(await store.reserve(reservation(key2.id, { amountUsd: 0.01 }))).toEqual({ admitted: true });
			// Settled with a cost other than the price: the spend is the cost.
			const key3 = managedKey();
			await store.create(withoutSecret(key3));
			const two = reservation(key3.id, { amountUsd: 0.0035, limitUsd: 1 });
			await store.reserve(two);
			await store.settle(two.id, 0.007);
			expect(await store.spent(key3.id, new Date(0))).toBeCloseTo(0.007, 9);
		});

		it('admits exactly k of many simultaneous reservations with room for k', async () => {
			const key = managedKey();
			await store.create(withoutSecret(key));
			const stores = harness.shared ? [store, await open(), await open()] : [store];
			const outcomes = await Promise.all(
				Array.from({ length: 24 }, (_, index) => stores[index % stores.length]!.reserve(reservation(key.id, { limitUsd: 0.0245 }))),
			);
			expect(outcomes.filter((outcome) => outcome.admitted)).toHaveLength(7);
		});

		it('a charge left by a store that went away mid-generation keeps counting, however long after; a settle or release counts once', async () => {
			const dead = harness.shared ? await open() : store;
			const alive = harness.shared ? await open() : store;
			const key = managedKey();
			await alive.create(withoutSecret(key));
			const charged = reservation(key.id, { amountUsd: 0.01, limitUsd: 0.01, since: new Date(0) });
			expect(await dead.reserve(charged)).toEqual({ admitted: true });
			if (harness.shared) await dead.close?.();
			const aWeekLater = new Date(Date.now() + 7 * 86_400_000);
			expect(await alive.reserve(reservation(key.id, { amountUsd: 0.0035, limitUsd: 0.01, since: new Date(0) }), aWeekLater)).toEqual({ admitted: false, spentUsd: 0.01 });
			// Another store never settles or refunds what it did not charge.
			await alive.release(charged.id);
			expect(await alive.spent(key.id, new Date(0))).toBe(0.01);
			const twice = reservation(key.id, { amountUsd: 0.0035, limitUsd: 1, since: new Date(0) });
			await alive.reserve(twice);
			await alive.settle(twice.id, 0.002);
			await alive.settle(twice.id, 0.002);
			await alive.release(twice.id);
			expect(await alive.spent(key.id, new Date(0))).toBe(0.012);
		});
	});
}
