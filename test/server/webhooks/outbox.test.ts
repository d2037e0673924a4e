/**
 * The delivery loop on the data dir's outbox, to a receiver on loopback, on a fake clock: signed
 * deliveries a receiver can verify, retries after a 500 with the same id and body and growing
 * pauses, giving up after the last, the address guard again at delivery, receivers that hang
 * without holding up an enqueue, and a backlog bounded per key and by the retry window.
 */
import type { SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { groupCommitOf } from '../../../server/src/db/sqlite/group-commit';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { RETRY_PAUSES_MS, RETRY_WINDOW_MS, WebhookOutbox, type DeliveryOutcome, type OutboxOptions } from '../../../server/src/webhooks/outbox';
import { SqlOutboxStore } from '../../../server/src/webhooks/sql-outbox-store';
import { useFakeClock } from '../support/clock';
import { eventually } from '../support/http';
import { useSqliteDataDir } from '../support/sqlite-data-dir';
import { startReceiver, verifyStandardWebhook, type Receiver } from '../support/webhook-receiver';

const dataDir = useSqliteDataDir('imagegen-outbox-loop-');
let receiver: Receiver;
let outboxes: WebhookOutbox[];
let databases: SqliteDatabase[];
let outcomes: DeliveryOutcome[];
let logged: Array<{ details: object; message: string }>;

beforeEach(async () => {
	useFakeClock();
	receiver = await startReceiver();
	outboxes = [];
	databases = [];
	outcomes = [];
	logged = [];
});
afterEach(async () => {
	for (const outbox of outboxes) await outbox.stop();
	for (const database of databases) await groupCommitOf(database).close();
	await receiver.close();
	jest.useRealTimers();
});

function startOutbox(options: Partial<OutboxOptions> = {}): WebhookOutbox {
	const outbox = openOutbox(options);
	outbox.start();
	return outbox;
}

/** An outbox that only enqueues until started. */
function openOutbox(options: Partial<OutboxOptions> = {}): WebhookOutbox {
	const database = dataDir.openDatabase();
	databases.push(database);
	const log = (details: object, message: string) => logged.push({ details, message });
	const outbox = new WebhookOutbox(new SqlOutboxStore(new SqliteAdapter(database)), {
		allowPrivate: true,
		keepFailedMs: 86_400_000,
		log: { warn: log, error: log },
		onOutcome: (outcome, count) => outcomes.push(...Array<DeliveryOutcome>(count ?? 1).fill(outcome)),
		...options,
	});
	outboxes.push(outbox);
	return outbox;
}

const BODY = JSON.stringify({ type: 'generation.succeeded', timestamp: '2030-01-01T00:00:00.000Z', data: { id: 'gen_1', note: 'é 🎨' } });
const event = (url = receiver.url, signingKeyId: string | null = 'key-a') => ({ url, signingKeyId, type: 'generation.succeeded', body: BODY });

/** Moves the fake clock and lets the polls it fired finish their attempts. */
async function advance(outbox: WebhookOutbox, ms: number): Promise<void> {
	jest.advanceTimersByTime(ms);
	await outbox.settled();
}

it('a delivery is a JSON POST signed so that a receiver verifies it with the key’s whsec_ secret', async () => {
	const outbox = startOutbox();
	const id = await outbox.enqueue(event());
	await outbox.settled();
	expect(receiver.received).toHaveLength(1);
	const [delivery] = receiver.received;
	expect(delivery!.headers['content-type']).toBe('application/json');
	expect(delivery!.headers['webhook-id']).toBe(id);
	expect(delivery!.body).toBe(BODY);
	const secret = await outbox.secretFor('key-a');
	expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
	verifyStandardWebhook(secret, delivery!.headers, delivery!.body, Math.floor(Date.now() / 1000));
	// Another key's secret does not verify it, and a body changed on the way does not either.
	expect(() => verifyStandardWebhook(`${secret.slice(0, -4)}AAA=`, delivery!.headers, delivery!.body, Math.floor(Date.now() / 1000))).toThrow('no signature matches');
	expect(() => verifyStandardWebhook(secret, delivery!.headers, `${delivery!.body} `, Math.floor(Date.now() / 1000))).toThrow('no signature matches');
	expect(await outbox.secretFor('key-b')).not.toBe(secret);
	expect(outcomes).toEqual(['delivered']);
});

it('a receiver answering 500 then 200 gets two deliveries: same id and body, re-signed, the retry within 60 s', async () => {
	const outbox = startOutbox();
	receiver.answer(500);
	await outbox.enqueue(event());
	await outbox.settled();
	expect(receiver.received).toHaveLength(1);
	receiver.answer(200);
	await advance(outbox, RETRY_PAUSES_MS[0] - 1_000);
	expect(receiver.received).toHaveLength(1);
	await advance(outbox, 1_000);
	expect(receiver.received).toHaveLength(2);
	expect(RETRY_PAUSES_MS[0]).toBeLessThanOrEqual(60_000);
	const [first, second] = receiver.received;
	expect(second!.headers['webhook-id']).toBe(first!.headers['webhook-id']);
	expect(second!.body).toBe(first!.body);
	expect(Number(second!.headers['webhook-timestamp']) - Number(first!.headers['webhook-timestamp'])).toBe(RETRY_PAUSES_MS[0] / 1000);
	const secret = await outbox.secretFor('key-a');
	for (const delivery of receiver.received) verifyStandardWebhook(secret, delivery.headers, delivery.body, Number(delivery.headers['webhook-timestamp']));
	await advance(outbox, 3_600_000);
	expect(receiver.received).toHaveLength(2);
	expect(outcomes).toEqual(['retried', 'delivered']);
});

it('retries with growing pauses for hours, then gives up and keeps the delivery as failed until the retention', async () => {
	const outbox = startOutbox({ keepFailedMs: 3_600_000 });
	receiver.answer(503);
	await outbox.enqueue(event());
	await outbox.settled();
	const started = Number(receiver.received[0]!.headers['webhook-timestamp']) * 1000;
	for (const pause of RETRY_PAUSES_MS) await advance(outbox, pause);
	const attempts = receiver.received.map((delivery) => Number(delivery.headers['webhook-timestamp']) * 1000 - started);
	expect(attempts).toEqual(RETRY_PAUSES_MS.reduce<number[]>((at, pause) => [...at, at[at.length - 1]! + pause], [0]));
	expect(attempts[attempts.length - 1]).toBeGreaterThanOrEqual(3_600_000);
	expect(new Set(receiver.received.map((delivery) => delivery.headers['webhook-id'])).size).toBe(1);
	expect(outcomes.filter((outcome) => outcome === 'retried')).toHaveLength(RETRY_PAUSES_MS.length);
	expect(outcomes[outcomes.length - 1]).toBe('failed');
	expect(logged.some(({ message }) => message === 'webhook delivery given up')).toBe(true);
	const [database] = databases;
	expect(database!.prepare("SELECT state, attempts, last_error FROM webhook_outbox").all()).toEqual([
		{ state: 'failed', attempts: RETRY_PAUSES_MS.length + 1, last_error: 'the receiver answered HTTP 503' },
	]);
	await advance(outbox, 24 * 3_600_000);
	expect(receiver.received).toHaveLength(RETRY_PAUSES_MS.length + 1);
	expect(database!.prepare('SELECT count(*) AS rows FROM webhook_outbox').get()).toEqual({ rows: 0 });
});

it('the address guard applies again at delivery: a loopback receiver is not contacted unless allowed', async () => {
	const outbox = startOutbox({ allowPrivate: false });
	await outbox.enqueue(event());
	await outbox.settled();
	expect(receiver.received).toHaveLength(0);
	expect(outcomes).toEqual(['retried']);
	expect(logged[0]!.details).toMatchObject({ error: expect.stringMatching(/refused address: 127\.0\.0\.1 is a loopback/) });
});

it('a name that resolves to a private address by delivery time is refused (stubbed DNS; nothing is sent)', async () => {
	const resolved: string[] = [];
	const outbox = startOutbox({
		allowPrivate: false,
		resolve: async (host) => {
			resolved.push(host);
			return [{ address: '93.184.216.34', family: 4 }, { address: '10.1.2.3', family: 4 }];
		},
	});
	await outbox.enqueue(event('https://hooks.example.test/hook'));
	await outbox.settled();
	expect(resolved).toEqual(['hooks.example.test']);
	expect(logged[0]!.details).toMatchObject({ error: expect.stringMatching(/10\.1\.2\.3 is a private/) });
});

it('receivers that hang cost their own timers: enqueueing stays quick and each attempt ends at its limit', async () => {
	const outbox = startOutbox({ attemptTimeoutMs: 300, concurrency: 2 });
	receiver.answer('hang');
	const started = performance.now();
	for (let index = 0; index < 10; index++) await outbox.enqueue(event());
	expect(performance.now() - started).toBeLessThan(1_000);
	await outbox.settled();
	// Two at a time, each freed slot taken by the next: the others waited for a slot, not the enqueuer.
	expect(receiver.received).toHaveLength(10);
	expect(outcomes).toEqual(Array(10).fill('retried'));
	expect(performance.now() - started).toBeGreaterThanOrEqual(5 * 300);
	expect(logged[0]!.details).toMatchObject({ error: 'no answer within 0.3 s' });
});

describe('one receiver that hangs holds no more than its share of the attempts', () => {
	let others: Receiver[];
	beforeEach(() => {
		others = [];
	});
	afterEach(async () => {
		for (const other of others) await other.close();
	});
	async function anotherReceiver(): Promise<Receiver> {
		const other = await startReceiver();
		others.push(other);
		return other;
	}

	it('another key’s receiver gets its delivery at once while 20 deliveries to the hanging one wait', async () => {
		const outbox = startOutbox({ attemptTimeoutMs: 5_000 });
		receiver.answer('hang');
		for (let index = 0; index < 20; index++) await outbox.enqueue(event(receiver.url, 'key-a'));
		expect(await eventually(() => receiver.received.length >= 2, 2_000, 10)).toBe(true);
		jest.advanceTimersByTime(1);
		const healthy = await anotherReceiver();
		const enqueued = performance.now();
		await outbox.enqueue(event(healthy.url, 'key-b'));
		// Within one poll and its own answer time, not after the hanging attempts' 5 s.
		expect(await eventually(() => healthy.received.length === 1, 1_000, 10)).toBe(true);
		expect(performance.now() - enqueued).toBeLessThan(1_000);
		// While the hanging receiver's attempts were still open: it held two, the rest of its deliveries wait for those.
		expect(outcomes).not.toContain('retried');
		expect(receiver.received).toHaveLength(2);
		expect(await eventually(() => outcomes.includes('delivered'), 1_000, 10)).toBe(true);
		// Stopped rather than settled: the hanging receiver's 18 others would take 2 at a time, 5 s each.
		await outbox.stop();
	});

	it('the hanging receiver’s deliveries still all go out, two at a time, and keep their retries', async () => {
		const outbox = startOutbox({ attemptTimeoutMs: 200 });
		receiver.answer('hang');
		for (let index = 0; index < 10; index++) await outbox.enqueue(event());
		await outbox.settled();
		expect(receiver.received).toHaveLength(10);
		expect(receiver.mostAtOnce()).toBe(2);
		expect(outcomes).toEqual(Array(10).fill('retried'));
		receiver.answer(200);
		await advance(outbox, RETRY_PAUSES_MS[0]);
		expect(receiver.received).toHaveLength(20);
		expect(new Set(receiver.received.map((delivery) => delivery.headers['webhook-id'])).size).toBe(10);
		expect(outcomes.filter((outcome) => outcome === 'delivered')).toHaveLength(10);
	});

	it('one key with hanging receivers on many hosts holds at most 4 attempts: another key is still served', async () => {
		const outbox = startOutbox({ attemptTimeoutMs: 5_000 });
		const hanging = [receiver, await anotherReceiver(), await anotherReceiver(), await anotherReceiver()];
		for (const one of hanging) one.answer('hang');
		for (let index = 0; index < 16; index++) await outbox.enqueue(event(hanging[index % 4]!.url, 'key-a'));
		expect(await eventually(() => hanging.reduce((sum, one) => sum + one.received.length, 0) >= 4, 2_000, 10)).toBe(true);
		jest.advanceTimersByTime(1);
		const healthy = await anotherReceiver();
		await outbox.enqueue(event(healthy.url, 'key-b'));
		expect(await eventually(() => healthy.received.length === 1, 1_000, 10)).toBe(true);
		expect(hanging.reduce((sum, one) => sum + one.received.length, 0)).toBe(4);
		await outbox.stop();
	});
});

describe('a backlog has bounds', () => {
	const pendingRows = () => databases[0]!.prepare<[], { id: string }>("SELECT id FROM webhook_outbox WHERE state = 'pending' ORDER BY created_at, id").all();

	it('a key with its cap of deliveries pending has the next one refused, logged and counted; another key’s still goes in', async () => {
		const outbox = openOutbox({ maxPendingPerKey: 3 });
		const ids = [];
		for (let index = 0; index < 3; index++) ids.push(await outbox.enqueue(event(receiver.url, 'key-a')));
		expect(ids.every((id) => typeof id === 'string')).toBe(true);
		expect(await outbox.enqueue(event(receiver.url, 'key-a'))).toBeNull();
		expect(await outbox.enqueue(event(receiver.url, 'key-b'))).toMatch(/^msg_/);
		expect(pendingRows()).toHaveLength(4);
		expect(outcomes).toEqual(['dropped']);
		expect(logged).toEqual([{ details: { keyId: 'key-a', event: 'generation.succeeded', pending: 3 }, message: 'webhook delivery dropped: the key has too many pending' }]);
		// Once delivered, the key has room again.
		outbox.start();
		await outbox.settled();
		expect(receiver.received).toHaveLength(4);
		expect(await outbox.enqueue(event(receiver.url, 'key-a'))).toMatch(/^msg_/);
	});

	it('deliveries still pending past the retry window are swept, counted and logged; younger ones stay', async () => {
		expect(RETRY_WINDOW_MS).toBeGreaterThan(RETRY_PAUSES_MS.reduce((sum, pause) => sum + pause, 0));
		const outbox = startOutbox();
		receiver.answer(503);
		const old = [await outbox.enqueue(event()), await outbox.enqueue(event(receiver.url, 'key-b'))];
		await outbox.settled();
		jest.setSystemTime(Date.now() + RETRY_WINDOW_MS - 60_000);
		const young = await outbox.enqueue(event());
		await outbox.settled();
		expect(pendingRows().map((row) => row.id).sort()).toEqual([...old, young].sort());
		expect(outcomes).not.toContain('expired');
		// The next sweep, a minute on: both old ones are past the window.
		await advance(outbox, 62_000);
		expect(pendingRows().map((row) => row.id)).toEqual([young]);
		expect(outcomes.filter((outcome) => outcome === 'expired')).toHaveLength(2);
		expect(logged).toContainEqual({ details: { deliveries: 2, hours: RETRY_WINDOW_MS / 3_600_000 }, message: 'webhook deliveries expired: not delivered within the retry window' });
	});
});

it('an alert is sent unsigned: the id and timestamp only', async () => {
	const outbox = startOutbox();
	await outbox.enqueue(event(receiver.url, null));
	await outbox.settled();
	expect(receiver.received[0]!.headers['webhook-id']).toMatch(/^msg_/);
	expect(receiver.received[0]!.headers['webhook-signature']).toBeUndefined();
});

it('two processes on one data dir agree on the signing secret', async () => {
	const one = startOutbox();
	const two = startOutbox();
	const secrets = await Promise.all([one.secretFor('key-a'), two.secretFor('key-a')]);
	expect(secrets[1]).toBe(secrets[0]);
});

it('an outbox that was not started only enqueues: nothing is sent until one is started', async () => {
	const database = dataDir.openDatabase();
	databases.push(database);
	const log = { warn: jest.fn(), error: jest.fn() };
	const idle = new WebhookOutbox(new SqlOutboxStore(new SqliteAdapter(database)), { allowPrivate: true, keepFailedMs: 60_000, log });
	await idle.enqueue(event());
	await idle.settled();
	jest.advanceTimersByTime(10_000);
	await idle.settled();
	expect(receiver.received).toHaveLength(0);
	const started = startOutbox();
	await started.poll();
	await started.settled();
	expect(receiver.received).toHaveLength(1);
});
