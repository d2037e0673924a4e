/**
 * What every OutboxStore must do, written once and run against each engine (SQLite in the data
 * dir, PostgreSQL): deliveries kept byte for byte under their id, claimed by one holder at a time
 * with a lease, finished only by the latest claim, retried when due, kept when given up until
 * swept; pending deliveries capped per key, counted across processes and swept once past their
 * retry window; alerts once per key, period, kind and budget; one service secret whoever asks first.
 */
import { randomBytes } from 'node:crypto';
import type { NewDelivery, OutboxStore } from '../../../server/src/webhooks/outbox-store';

export interface OutboxStoreHarness {
	/** A store over the harness's backing; called again, another process or replica on the same one. */
	open(): Promise<OutboxStore>;
	cleanup(): Promise<void>;
}

const T0 = Date.parse('2030-01-01T00:00:00Z');
const LEASE = 60_000;
const HOUR = 3_600_000;
/** A body a careless store would alter: non-ASCII, line separators, CRLF, a trailing space. */
const TRICKY_BODY = '{"type":"generation.succeeded","data":{"note":"é ✓ 🎨 \u2028\u2029"}}\r\n ';

function delivery(id: string, overrides: Partial<NewDelivery> = {}): NewDelivery {
	return { id, url: 'https://receiver.example/hook?x=1', signingKeyId: 'key-a', body: TRICKY_BODY, eventType: 'generation.succeeded', ...overrides };
}

export function describeOutboxStoreContract(name: string, harness: () => OutboxStoreHarness): void {
	describe(`outbox store contract: ${name}`, () => {
		let current: OutboxStoreHarness;
		beforeEach(() => {
			current = harness();
		});
		afterEach(() => current.cleanup());

		it('keeps a delivery byte for byte and hands it to one claim until its lease ends', async () => {
			const store = await current.open();
			await store.enqueue(delivery('msg_1'), T0);
			expect(await store.claimDue(T0 - 1, 10, LEASE)).toEqual([]);
			const [claimed] = await store.claimDue(T0, 10, LEASE);
			expect(claimed).toMatchObject({ ...delivery('msg_1'), attempts: 0, createdAt: T0 });
			expect(await store.claimDue(T0 + LEASE - 1, 10, LEASE)).toEqual([]);
			// The holder died: once the lease ends, another claim takes it, and the old one may no longer finish it.
			const [again] = await store.claimDue(T0 + LEASE, 10, LEASE);
			expect(again!.id).toBe('msg_1');
			expect(again!.claimToken).not.toBe(claimed!.claimToken);
			expect(await store.delivered(claimed!)).toBe(false);
			expect(await store.retryAt(claimed!, T0, 'late')).toBe(false);
			expect(await store.delivered(again!)).toBe(true);
			expect(await store.claimDue(T0 + 10 * LEASE, 10, LEASE)).toEqual([]);
		});

		it('a retry counts the attempt and is due again at its time, with the same id and body', async () => {
			const store = await current.open();
			await store.enqueue(delivery('msg_r', { signingKeyId: null, eventType: 'budget.threshold' }), T0);
			const [first] = await store.claimDue(T0, 10, LEASE);
			expect(await store.retryAt(first!, T0 + 5_000, 'the receiver answered HTTP 500')).toBe(true);
			expect(await store.claimDue(T0 + 4_999, 10, LEASE)).toEqual([]);
			const [second] = await store.claimDue(T0 + 5_000, 10, LEASE);
			expect(second).toMatchObject({ id: 'msg_r', body: TRICKY_BODY, signingKeyId: null, eventType: 'budget.threshold', attempts: 1 });
		});

		it('a delivery given up is claimed no more and is swept only once it is older than the cut', async () => {
			const store = await current.open();
			await store.enqueue(delivery('msg_old'), T0);
			await store.enqueue(delivery('msg_new'), T0);
			const claims = await store.claimDue(T0, 10, LEASE);
			const byId = new Map(claims.map((claim) => [claim.id, claim]));
			expect(await store.giveUp(byId.get('msg_old')!, T0 + 1_000, 'gave up')).toBe(true);
			expect(await store.giveUp(byId.get('msg_new')!, T0 + 5_000, 'gave up')).toBe(true);
			expect(await store.claimDue(T0 + 100 * LEASE, 10, LEASE)).toEqual([]);
			expect(await store.sweepFailed(T0 + 2_000)).toBe(1);
			expect(await store.sweepFailed(T0 + 2_000)).toBe(0);
			expect(await store.sweepFailed(T0 + 6_000)).toBe(1);
		});

		it('claims at most the limit, the longest due first', async () => {
			const store = await current.open();
			for (let index = 0; index < 5; index++) await store.enqueue(delivery(`msg_${index}`), T0 + index);
			expect((await store.claimDue(T0 + 10, 3, LEASE)).map((claim) => claim.id).sort()).toEqual(['msg_0', 'msg_1', 'msg_2']);
			expect(await store.claimDue(T0 + 10, 0, LEASE)).toEqual([]);
			expect((await store.claimDue(T0 + 10, 3, LEASE)).map((claim) => claim.id).sort()).toEqual(['msg_3', 'msg_4']);
		});

		it('two processes claiming at once share the due deliveries: none is claimed twice', async () => {
			const [one, two] = [await current.open(), await current.open()];
			for (let index = 0; index < 40; index++) await one.enqueue(delivery(`msg_${index}`), T0);
			const rounds = await Promise.all([one.claimDue(T0, 25, LEASE), two.claimDue(T0, 25, LEASE), one.claimDue(T0, 25, LEASE), two.claimDue(T0, 25, LEASE)]);
			const ids = rounds.flat().map((claim) => claim.id);
			expect(ids).toHaveLength(40);
			expect(new Set(ids).size).toBe(40);
		});

		it('with caps, takes no more for one origin or one key than they have room for, counting the attempts open', async () => {
			const store = await current.open();
			const at = (origin: string, key: string | null, count: number, from: number) =>
				Array.from({ length: count }, (_, index) => ({ id: `msg_${origin}_${index}`, url: `https://${origin}.example/hook/${index}`, signingKeyId: key, time: T0 + from + index }));
			const rows = [...at('x', 'key-a', 5, 0), ...at('y', 'key-a', 5, 10), ...at('z', 'key-b', 3, 20), ...at('w', null, 1, 30)];
			for (const row of rows) await store.enqueue(delivery(row.id, { url: row.url, signingKeyId: row.signingKeyId }), row.time);
			const caps = { perOrigin: 2, perKey: 3 };
			const first = await store.claimDue(T0 + 100, 8, LEASE, { ...caps, busy: [] });
			// key-a's first three are x's; x takes two, so y waits for the next claim, which counts x as full.
			expect(first.map((claim) => claim.id)).toEqual(['msg_x_0', 'msg_x_1', 'msg_z_0', 'msg_z_1', 'msg_w_0']);
			expect(first[0]).toMatchObject({ origin: 'https://x.example', signingKeyId: 'key-a' });
			const second = await store.claimDue(T0 + 100, 8, LEASE, { ...caps, busy: first });
			expect(second.map((claim) => claim.id)).toEqual(['msg_y_0']);
			expect(await store.claimDue(T0 + 100, 8, LEASE, { ...caps, busy: [...first, ...second] })).toEqual([]);
			// An attempt ended (x's first, delivered): its origin and key have room for one more again.
			expect(await store.delivered(first[0]!)).toBe(true);
			const third = await store.claimDue(T0 + 100, 8, LEASE, { ...caps, busy: [...first.slice(1), ...second] });
			expect(third.map((claim) => claim.id)).toEqual(['msg_x_2']);
			// The limit still holds, and without caps every due delivery may go.
			expect(await store.claimDue(T0 + 100, 1, LEASE)).toHaveLength(1);
			expect(await store.claimDue(T0 + 100, 20, LEASE)).toHaveLength(rows.length - first.length - second.length - third.length - 1);
		});

		it('an origin is the URL’s scheme, host and port, whatever the path, query or letter case', async () => {
			const store = await current.open();
			await store.enqueue(delivery('msg_1', { url: 'HTTPS://Hooks.Example:8443/a?b=1' }), T0);
			await store.enqueue(delivery('msg_2', { url: 'https://hooks.example:8443/c#d' }), T0 + 1);
			await store.enqueue(delivery('msg_3', { url: 'https://hooks.example/a' }), T0 + 2);
			const claims = await store.claimDue(T0 + 10, 10, LEASE, { perOrigin: 1, perKey: 10, busy: [] });
			expect(claims.map((claim) => [claim.id, claim.origin])).toEqual([
				['msg_1', 'https://hooks.example:8443'],
				['msg_3', 'https://hooks.example'],
			]);
		});

		it('an alert is enqueued once per key, period and kind, whichever process asks', async () => {
			const [one, two] = [await current.open(), await current.open()];
			const mark = { keyId: 'key-a', period: 'day:2030-01-01', kind: 'threshold', limitUsd: 10 } as const;
			const alert = (id: string) => delivery(id, { signingKeyId: null, eventType: 'budget.threshold' });
			const first = await Promise.all([one.enqueueAlert(mark, alert('msg_a1'), T0), two.enqueueAlert(mark, alert('msg_a2'), T0)]);
			expect(first.filter(Boolean)).toHaveLength(1);
			expect(await one.enqueueAlert(mark, alert('msg_a3'), T0)).toBe(false);
			expect(await one.enqueueAlert({ ...mark, kind: 'exhausted' }, alert('msg_a4'), T0)).toBe(true);
			expect(await two.enqueueAlert({ ...mark, period: 'day:2030-01-02' }, alert('msg_a5'), T0)).toBe(true);
			expect(await two.enqueueAlert({ ...mark, keyId: 'key-b' }, alert('msg_a6'), T0)).toBe(true);
			const claimed = (await one.claimDue(T0, 10, LEASE)).map((claim) => claim.id);
			expect(claimed).toHaveLength(4);
			expect(claimed).not.toContain('msg_a3');
		});

		it('an alert is enqueued again for the same key, period and kind once its budget changed', async () => {
			const store = await current.open();
			const mark = { keyId: 'key-a', period: 'day:2030-01-01', kind: 'threshold', limitUsd: 10 } as const;
			const alert = (id: string) => delivery(id, { signingKeyId: null, eventType: 'budget.threshold' });
			expect(await store.enqueueAlert(mark, alert('msg_b1'), T0)).toBe(true);
			expect(await store.enqueueAlert(mark, alert('msg_b2'), T0)).toBe(false);
			// The operator raised the budget: passing 80 % of the new one is news.
			expect(await store.enqueueAlert({ ...mark, limitUsd: 20 }, alert('msg_b3'), T0)).toBe(true);
			expect(await store.enqueueAlert({ ...mark, limitUsd: 20 }, alert('msg_b4'), T0)).toBe(false);
			// Amounts a float would tell apart but a budget does not (whole micro-dollars) are one budget.
			expect(await store.enqueueAlert({ ...mark, limitUsd: 0.1 + 0.2 }, alert('msg_b5'), T0)).toBe(true);
			expect(await store.enqueueAlert({ ...mark, limitUsd: 0.3 }, alert('msg_b6'), T0)).toBe(false);
			expect((await store.claimDue(T0, 10, LEASE)).map((claim) => claim.id).sort()).toEqual(['msg_b1', 'msg_b3', 'msg_b5']);
		});

		it('refuses a delivery past its key’s cap of pending ones; other keys, alerts and ended deliveries are not held back', async () => {
			const store = await current.open();
			expect(await store.enqueue(delivery('msg_1'), T0, 2)).toBe(true);
			expect(await store.enqueue(delivery('msg_2'), T0, 2)).toBe(true);
			expect(await store.enqueue(delivery('msg_3'), T0, 2)).toBe(false);
			expect(await store.enqueue(delivery('msg_b1', { signingKeyId: 'key-b' }), T0, 2)).toBe(true);
			expect(await store.enqueue(delivery('msg_n1', { signingKeyId: null }), T0, 2)).toBe(true);
			// Claimed, retried and given up: one is still pending, one counts no more.
			const claims = new Map((await store.claimDue(T0, 10, LEASE)).map((claim) => [claim.id, claim]));
			expect(await store.enqueue(delivery('msg_4'), T0, 2)).toBe(false);
			expect(await store.retryAt(claims.get('msg_1')!, T0 + 5_000, 'the receiver answered HTTP 500')).toBe(true);
			expect(await store.giveUp(claims.get('msg_2')!, T0, 'gave up')).toBe(true);
			expect(await store.enqueue(delivery('msg_5'), T0, 2)).toBe(true);
			expect(await store.enqueue(delivery('msg_6'), T0, 2)).toBe(false);
			// Without a cap the store takes what it is given.
			expect(await store.enqueue(delivery('msg_7'), T0)).toBe(true);
		});

		it('sweeps pending deliveries made before the cut, unless an attempt holds one now', async () => {
			const store = await current.open();
			await store.enqueue(delivery('msg_retrying'), T0);
			await store.enqueue(delivery('msg_held'), T0);
			await store.enqueue(delivery('msg_young'), T0 + HOUR);
			const claims = new Map((await store.claimDue(T0, 10, LEASE)).map((claim) => [claim.id, claim]));
			expect(await store.retryAt(claims.get('msg_retrying')!, T0 + 3 * HOUR, 'the receiver answered HTTP 500')).toBe(true);
			await store.enqueue(delivery('msg_waiting'), T0);
			expect(await store.sweepExpired(T0 + 1, T0 + 1_000)).toBe(2);
			expect(await store.sweepExpired(T0 + 1, T0 + 1_000)).toBe(0);
			// The holder of the attempt died: once its lease ended the delivery is swept too, and the claim may no longer finish it.
			expect(await store.sweepExpired(T0 + 1, T0 + LEASE)).toBe(1);
			expect(await store.retryAt(claims.get('msg_held')!, T0 + HOUR, 'no answer within 10 s')).toBe(false);
			expect((await store.claimDue(T0 + HOUR, 10, LEASE)).map((claim) => claim.id)).toEqual(['msg_young']);
		});

		it('counts the pending deliveries of every process: waiting, under an attempt or for a retry; not delivered, given up or swept', async () => {
			const [one, two] = [await current.open(), await current.open()];
			expect(await one.pendingCount()).toBe(0);
			for (let index = 0; index < 4; index++) await one.enqueue(delivery(`msg_${index}`), T0);
			await two.enqueue(delivery('msg_other', { signingKeyId: 'key-b' }), T0 + 1);
			expect(await one.pendingCount()).toBe(5);
			const claims = new Map((await two.claimDue(T0 + 1, 10, LEASE)).map((claim) => [claim.id, claim]));
			// Under an attempt a delivery is still owed to its receiver.
			expect(await one.pendingCount()).toBe(5);
			expect(await two.delivered(claims.get('msg_0')!)).toBe(true);
			expect(await two.retryAt(claims.get('msg_1')!, T0 + 5_000, 'the receiver answered HTTP 500')).toBe(true);
			expect(await two.giveUp(claims.get('msg_2')!, T0 + 2, 'gave up')).toBe(true);
			const mark = { keyId: 'key-a', period: 'day:2030-01-01', kind: 'threshold', limitUsd: 10 } as const;
			expect(await one.enqueueAlert(mark, delivery('msg_alert', { signingKeyId: null, eventType: 'budget.threshold' }), T0 + 10)).toBe(true);
			expect(await one.pendingCount()).toBe(4);
			// The retried one is past the cut and held by no attempt: swept; those under an attempt stay.
			expect(await one.sweepExpired(T0 + 2, T0 + LEASE)).toBe(1);
			expect(await two.pendingCount()).toBe(3);
			expect(await one.sweepFailed(T0 + 3)).toBe(1);
			expect(await two.pendingCount()).toBe(3);
		});

		it('one service secret for every process that asks, made once and kept across a restart', async () => {
			const [one, two] = [await current.open(), await current.open()];
			const made: Buffer[] = [];
			const create = () => {
				const secret = randomBytes(32);
				made.push(secret);
				return secret;
			};
			const answers = await Promise.all([one.serviceSecret('webhook-signing', create), two.serviceSecret('webhook-signing', create), one.serviceSecret('webhook-signing', create)]);
			expect(answers[0]).toHaveLength(32);
			for (const answer of answers) expect(answer.equals(answers[0]!)).toBe(true);
			expect(made.some((secret) => secret.equals(answers[0]!))).toBe(true);
			await one.close?.();
			const reopened = await current.open();
			expect((await reopened.serviceSecret('webhook-signing', () => randomBytes(32))).equals(answers[0]!)).toBe(true);
			expect((await reopened.serviceSecret('another', () => Buffer.alloc(32, 7))).equals(answers[0]!)).toBe(false);
		});
	});
}
