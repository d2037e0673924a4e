/**
 * The job runner in the service (in process), against a stand-in host that names its jobs and
 * counts what it is asked: a job left running by a process that stopped is followed to its host's
 * end by the next start (never created again) and charged once; one the host never named ends
 * `interrupted` with its charge given back; a cancel stops a job running here, asks the host to
 * cancel one running elsewhere, and a run that ends after its job was canceled charges nothing.
 */
import { mkdtempSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { GenerationResponse } from '../../../core/api';
import { MODEL_IDS } from '../../../core/models';
import { parseGenerationRequest } from '../../../core/schemas';
import type { GenerationProvider, HostJobRef, ProviderImage } from '../../../server/src/generation/provider';
import type { ProviderTable } from '../../../server/src/generation/providers';
import { ImageBytes } from '../../../server/src/media/image-bytes';
import { newJobId } from '../../../server/src/jobs/job-runner';
import { storedRequest } from '../../../server/src/jobs/stored-request';
import type { GenerationObject, JobEndListener, NewJob } from '../../../server/src/jobs/job-store';
import { SqlJobStore } from '../../../server/src/jobs/sql-job-store';
import { apiKeyIdOf } from '../../../server/src/keys/authenticate';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { TEST_API_KEY } from '../../helpers/server';
import { inject, startInProcessServer, type InProcessServer } from '../support/app';
import { eventually } from '../support/http';
import { makeImage } from '../support/media';

jest.setTimeout(60_000);

const KEY_ID = apiKeyIdOf(TEST_API_KEY);

/** A host that names its jobs; `hold` keeps every job running until released or aborted. */
class StandInHost implements GenerationProvider {
	readonly name = 'stand-in';
	readonly hasJobIds = true;
	creates = 0;
	aborted = 0;
	readonly resumed: HostJobRef[] = [];
	readonly canceled: HostJobRef[] = [];
	private release: (() => void) | null = null;
	private held: Promise<void> | null = null;

	constructor(private readonly image: Buffer) {}

	hold(): void {
		this.held = new Promise((resolve) => (this.release = resolve));
	}

	finish(): void {
		this.release?.();
		this.held = null;
	}

	async generate(_request: unknown, context: { signal: AbortSignal; hostJobStarted?(job: HostJobRef): Promise<void> }): Promise<ProviderImage[]> {
		this.creates += 1;
		await context.hostJobStarted?.({ provider: this.name, id: `host-${this.creates}` });
		return this.run(context.signal);
	}

	async resume(job: HostJobRef, context: { signal: AbortSignal }): Promise<ProviderImage[]> {
		this.resumed.push(job);
		return this.run(context.signal);
	}

	async cancel(job: HostJobRef): Promise<void> {
		this.canceled.push(job);
	}

	private async run(signal: AbortSignal): Promise<ProviderImage[]> {
		if (this.held) {
			const held = this.held;
			await new Promise<void>((resolve, reject) => {
				void held.then(resolve);
				signal.addEventListener('abort', () => {
					this.aborted += 1;
					reject(signal.reason);
				});
			});
		}
		return [ImageBytes.lent(this.image)];
	}
}

let host: StandInHost;
let dataDir: string;
let server: InProcessServer | undefined;
const ends: GenerationObject[] = [];
const listener: JobEndListener = { jobEnded: async ({ generation }) => void ends.push(generation) };

beforeEach(async () => {
	host = new StandInHost(await makeImage('png', 64, 64));
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-jobs-'));
	ends.length = 0;
});
afterEach(async () => {
	host.finish();
	await server?.stop({ removeData: true });
	server = undefined;
});

const providers = (): ProviderTable => Object.fromEntries(MODEL_IDS.map((id) => [id, host])) as unknown as ProviderTable;

async function start(listeners: JobEndListener[] = [listener]): Promise<InProcessServer> {
	server = await startInProcessServer({ dataDir, args: ['--log-level', 'silent'], parts: { providers: providers(), jobEndListeners: listeners } });
	return server;
}

async function call(path: string, init: { method?: string; body?: string; headers?: Record<string, string> } = {}) {
	const json: Record<string, string> = init.body === undefined ? {} : { 'content-type': 'application/json' };
	const answer = await inject(server!.app, path, { ...init, headers: { authorization: `Bearer ${TEST_API_KEY}`, ...json, ...init.headers } });
	return { status: answer.status, body: (await answer.json()) as any };
}

const job = async (id: string) => (await call(`/v1/generations/${id}`)).body;
const images = async () => (await server!.app.usageLedger.rows(KEY_ID)).reduce((sum, row) => sum + row.images, 0);

/** Another process on the same data dir: its own connection and store. */
async function elsewhere<T>(work: (store: SqlJobStore, database: SqliteDatabase) => Promise<T>): Promise<T> {
	const database = openSqliteDatabase(dataDir);
	const adapter = new SqliteAdapter(database);
	try {
		return await work(new SqlJobStore(adapter), database);
	} finally {
		await adapter.close();
	}
}

const spent = (database: SqliteDatabase) => (database.prepare('SELECT COALESCE(sum(spent_micros), 0) AS micros FROM key_spend_days WHERE key_id = ?').get(KEY_ID) as { micros: number }).micros;

const usageLines = (database: SqliteDatabase) => (database.prepare('SELECT count(*) AS lines FROM usage_lines WHERE api_key_id = ?').get(KEY_ID) as { lines: number }).lines;

/** A job a process that stopped left running, charged 5,000 micro-dollars at its admission. */
async function leftRunning(hostJob: HostJobRef | null, request: Record<string, unknown> = { model: 'p-image', prompt: 'a lighthouse', seed: 9 }): Promise<string> {
	const id = newJobId();
	const createdAt = new Date();
	const left: NewJob = {
		id,
		apiKeyId: KEY_ID,
		model: request.model as NewJob['model'],
		request: storedRequest(parseGenerationRequest(request)),
		webhookUrl: null,
		chargedMicros: 5_000,
		createdAt,
		owner: 'a-process-that-stopped',
		leaseUntil: new Date(Date.now() - 1_000),
	};
	await elsewhere(async (store, database) => {
		await store.create(left);
		if (hostJob) await store.hostJobStarted(id, hostJob);
		database.prepare('INSERT INTO key_spend_days (key_id, day, spent_micros) VALUES (?, ?, ?)').run(KEY_ID, createdAt.toISOString().slice(0, 10), 5_000);
	});
	return id;
}

describe('a start takes over the jobs a stopped process left running', () => {
	it("follows one the host named to its end: no create, charged once, and a later start leaves it be", async () => {
		const id = await leftRunning({ provider: 'stand-in', id: 'host-left' });
		await start();
		expect(await eventually(async () => (await job(id)).status === 'succeeded')).toBe(true);
		expect(host.creates).toBe(0);
		expect(host.resumed).toEqual([{ provider: 'stand-in', id: 'host-left' }]);
		const done = await job(id);
		expect(done.result).toMatchObject({ model: 'p-image', usage: { images: 1 }, data: [{ seed: 9, url: expect.any(String) }] });
		expect(await images()).toBe(1);
		expect(ends.map((end) => [end.id, end.status])).toEqual([[id, 'succeeded']]);
		await server!.stop();
		await start();
		await new Promise((resolve) => setTimeout(resolve, 300));
		expect(host.resumed).toHaveLength(1);
		expect(await images()).toBe(1);
		expect(await elsewhere(async (_store, database) => spent(database))).toBe(5_000);
	});

	it('follows an edit whose row kept none of its inline inputs: the host has them, nothing is loaded again', async () => {
		const inline = (await makeImage('png', 64, 48)).toString('base64');
		const request = { model: 'p-image-edit', prompt: 'warmer light', seed: 9, images: [inline, inline], aspect_ratio: '4:3' };
		const id = await leftRunning({ provider: 'stand-in', id: 'host-edit' }, request);
		await start();
		expect(await eventually(async () => (await job(id)).status === 'succeeded')).toBe(true);
		expect(host.creates).toBe(0);
		expect((await job(id)).result).toMatchObject({ model: 'p-image-edit', usage: { images: 1 } });
	});

	it('ends one the host never named as failed, code interrupted, its charge given back', async () => {
		const id = await leftRunning(null);
		await start();
		expect(await eventually(async () => (await job(id)).status === 'failed')).toBe(true);
		expect((await job(id)).error).toMatchObject({ code: 'interrupted', param: null });
		expect(host.creates + host.resumed.length).toBe(0);
		expect(await images()).toBe(0);
		expect(await elsewhere(async (_store, database) => spent(database))).toBe(0);
		expect(ends.map((end) => end.status)).toEqual(['failed']);
	});
});

describe('cancel', () => {
	it("stops a job running here: the host's work is aborted, the job reads canceled at once and stays so, nothing charged", async () => {
		await start();
		host.hold();
		const accepted = await call('/v1/images/generations', { method: 'POST', headers: { prefer: 'respond-async' }, body: JSON.stringify({ model: 'p-image', prompt: 'a fox' }) });
		expect(accepted.status).toBe(202);
		await eventually(async () => (await server!.app.jobStore.get(accepted.body.id, KEY_ID))?.hostJob !== null);
		expect((await server!.app.jobStore.get(accepted.body.id, KEY_ID))!.hostJob).toEqual({ provider: 'stand-in', id: 'host-1' });
		const canceled = await call(`/v1/generations/${accepted.body.id}/cancel`, { method: 'POST' });
		expect(canceled.status).toBe(200);
		expect(canceled.body).toMatchObject({ status: 'canceled', error: { code: 'canceled' }, result: null });
		expect(await eventually(() => host.aborted === 1)).toBe(true);
		expect(await job(accepted.body.id)).toEqual(canceled.body);
		await server!.stop();
		const { after, lines } = await elsewhere(async (store, database) => ({ after: await store.get(accepted.body.id, KEY_ID), lines: usageLines(database) }));
		expect(after).toMatchObject({ status: 'canceled', error: { code: 'canceled' }, result: null });
		expect(lines).toBe(0);
		expect(ends.map((end) => end.status)).toEqual(['canceled']);
	});

	it("asks the host to cancel a job another process runs, and leaves its charge to that process", async () => {
		const id = newJobId();
		await elsewhere(async (store) => {
			await store.create({
				id,
				apiKeyId: KEY_ID,
				model: 'p-image',
				request: { model: 'p-image', prompt: 'x' },
				webhookUrl: null,
				chargedMicros: 5_000,
				createdAt: new Date(),
				owner: 'a-live-process',
				leaseUntil: new Date(Date.now() + 60_000),
			});
			await store.hostJobStarted(id, { provider: 'stand-in', id: 'host-elsewhere' });
		});
		await start();
		const canceled = await call(`/v1/generations/${id}/cancel`, { method: 'POST' });
		expect(canceled.body.status).toBe('canceled');
		expect(host.canceled).toEqual([{ provider: 'stand-in', id: 'host-elsewhere' }]);
		expect((await server!.app.jobStore.get(id, KEY_ID))!.chargedMicros).toBe(5_000);
	});

	it('a run that ends after its job was canceled elsewhere charges nothing and leaves it canceled', async () => {
		await start();
		host.hold();
		const accepted = await call('/v1/images/generations', { method: 'POST', headers: { prefer: 'respond-async' }, body: JSON.stringify({ model: 'p-image', prompt: 'a hare' }) });
		await eventually(() => host.creates === 1);
		const canceled = await elsewhere((store) => store.cancel(accepted.body.id, KEY_ID, new Date()));
		expect(canceled!.canceledNow).toBe(true);
		host.finish();
		// A close waits for the jobs running here: the run has ended once it returns.
		await server!.stop();
		const { after, lines } = await elsewhere(async (store, database) => ({ after: await store.get(accepted.body.id, KEY_ID), lines: usageLines(database) }));
		expect(after).toMatchObject({ status: 'canceled', error: { code: 'canceled' }, result: null });
		expect(lines).toBe(0);
		expect(ends).toEqual([]);
	});
});

it('a synchronous call whose host names its job writes the name before the provider polls, and ends succeeded', async () => {
	await start();
	const answer = await call('/v1/images/generations', { method: 'POST', body: JSON.stringify({ model: 'p-image', prompt: 'a heron', seed: 4 }) });
	expect(answer.status).toBe(200);
	const [listed] = (await call('/v1/generations?limit=1')).body.data;
	expect(listed).toMatchObject({ status: 'succeeded', result: answer.body });
	expect((await server!.app.jobStore.get(listed.id, KEY_ID))!.hostJob).toEqual({ provider: 'stand-in', id: 'host-1' });
	expect(ends.map((end) => end.status)).toEqual(['succeeded']);
});

describe("an inline job's end", () => {
	let calls = 0;
	// With an Idempotency-Key, so that its image is kept for the job (one nobody can ask for again is not).
	const inlineCall = async () => {
		const answer = await call('/v1/images/generations', {
			method: 'POST',
			headers: { 'idempotency-key': `inline-end-${++calls}` },
			body: JSON.stringify({ model: 'p-image', prompt: 'a heron', response_format: 'b64_json' }),
		});
		expect(answer.status).toBe(200);
		return answer.body.data[0].b64_json as string;
	};

	it('reads no stored image back for listeners that do not want the bytes (the outbox)', async () => {
		await start();
		const opened = jest.spyOn(server!.app.hostedFiles, 'openWhole');
		await inlineCall();
		await eventually(() => ends.length === 1);
		expect((ends[0]!.result as GenerationResponse).data[0]).toMatchObject({ b64_json: '' });
		expect(opened).not.toHaveBeenCalled();
	});

	it('reads it once for a listener that wants the bytes', async () => {
		const withImages: GenerationObject[] = [];
		await start([listener, { wantsInlineImages: true, jobEnded: async ({ generation }) => void withImages.push(generation) }]);
		const opened = jest.spyOn(server!.app.hostedFiles, 'openWhole');
		const base64 = await inlineCall();
		await eventually(() => withImages.length === 1);
		expect((withImages[0]!.result as GenerationResponse).data[0]).toMatchObject({ b64_json: base64 });
		expect((ends[0]!.result as GenerationResponse).data[0]).toMatchObject({ b64_json: '' });
		expect(opened).toHaveBeenCalledTimes(1);
	});
});

describe('a synchronous call whose client goes away', () => {
	// The client closes its connection while it waits. node:http, not fetch: Node 22's server keeps
	// counting a connection that undici aborted until undici's keep-alive (4 s) runs out, and the
	// service's close in afterEach would wait for it.
	const leave = async (headers: Record<string, string>) => {
		host.hold();
		const request = http.request(`${server!.origin}/v1/images/generations`, {
			method: 'POST',
			headers: { authorization: `Bearer ${TEST_API_KEY}`, 'content-type': 'application/json', ...headers },
		});
		const closed = new Promise((resolve) => request.on('close', resolve));
		request.on('error', () => undefined);
		request.end(JSON.stringify({ model: 'p-image', prompt: 'a crane' }));
		await eventually(() => host.creates === 1);
		request.destroy();
		await closed;
		return (await call('/v1/generations?limit=1')).body.data[0].id as string;
	};

	it('cancels its job', async () => {
		await start();
		const id = await leave({});
		expect(await eventually(async () => (await job(id)).status === 'canceled')).toBe(true);
		expect(host.aborted).toBe(1);
	});

	it('with an Idempotency-Key, leaves its job running to its end', async () => {
		await start();
		const id = await leave({ 'idempotency-key': 'crane-1' });
		await new Promise((resolve) => setTimeout(resolve, 200));
		expect((await job(id)).status).toBe('running');
		host.finish();
		expect(await eventually(async () => (await job(id)).status === 'succeeded')).toBe(true);
		expect(host.aborted).toBe(0);
	});
});
