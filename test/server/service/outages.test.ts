/**
 * Engine outages for real: the bucket (s3rver) or PostgreSQL is stopped for a while under a running
 * service. While it is down every route that needs it answers 503 `service_unavailable` (a DELETE
 * whose bytes cannot go: `storage_unavailable`) with Retry-After and no internal address, and
 * /healthz says degraded with a 503; once it is back everything works again and no acknowledged
 * file was lost. A DELETE never orphans bytes.
 */
import { Client } from 'pg';
import { openDatabase } from '../../../server/src/db/postgres/postgres';
import { SqlUsageLedger } from '../../../server/src/usage/sql-usage-ledger';
import { startServer, type RunningServer } from '../../helpers/server';
import { call, download, eventually, postJson, uploadFile, type ApiAnswer } from '../support/http';
import { makeImage } from '../support/media';
import { startTestPostgres, type TestPostgres } from '../support/postgres';
import { S3RVER_CREDENTIALS, startS3rver, type S3TestServer } from '../support/s3';

jest.setTimeout(180_000);

const env = { ...S3RVER_CREDENTIALS, AWS_REGION: 'us-east-1' };
const INTERNAL_ADDRESS = /127\.0\.0\.1|ECONNREFUSED|localhost|::1/;

function expectUnavailable(answer: ApiAnswer, code = 'service_unavailable'): void {
	expect({ status: answer.status, code: answer.body?.error?.code, type: answer.body?.error?.type }).toEqual({ status: 503, code, type: 'server_error' });
	expect(Number(answer.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
	expect(answer.body.error.message).not.toMatch(INTERNAL_ADDRESS);
}

async function health(server: RunningServer): Promise<ApiAnswer> {
	return call(server, '/healthz', { auth: null });
}

describe('the bucket down, metadata embedded (S3 without --database-url)', () => {
	let s3: S3TestServer;
	let server: RunningServer;
	beforeAll(async () => {
		s3 = await startS3rver();
		server = await startServer({
			args: ['--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style'],
			env,
		});
	});
	afterAll(async () => {
		await server?.stop({ removeData: true });
		await s3?.stop();
	});

	const objectExists = async (url: string) => {
		const bytes = await s3.storage().read(url.split('/').pop()!);
		bytes?.destroy();
		return bytes !== null;
	};

	it('a DELETE while the bucket is unreachable is a retryable 503 and orphans nothing; the repeat deletes', async () => {
		const kept = await postJson(server, '/v1/uploads', { file: (await makeImage('png', 24, 24)).toString('base64') });
		const doomed = await postJson(server, '/v1/uploads', { file: (await makeImage('png', 20, 20)).toString('base64') });
		expect([kept.status, doomed.status]).toEqual([200, 200]);

		await s3.halt();
		try {
			expectUnavailable(await call(server, `/v1/files/${doomed.body.id}`, { method: 'DELETE' }), 'storage_unavailable');
			expectUnavailable(await uploadFile(server, await makeImage('png', 16, 16)));
			expectUnavailable(await postJson(server, '/v1/uploads', { file: (await makeImage('png', 16, 16)).toString('base64') }));
			const degraded = await health(server);
			expect(degraded.status).toBe(503);
			expect(degraded.body.status).toBe('degraded');
			expect(JSON.stringify(degraded.body)).not.toMatch(INTERNAL_ADDRESS);
		} finally {
			await s3.resume();
		}

		expect(await eventually(async () => (await health(server)).status === 200, 15_000)).toBe(true);
		// The file was not deleted, so the node's retry deletes it now, bytes included.
		expect((await call(server, `/v1/files/${doomed.body.id}`, { method: 'DELETE' })).status).toBe(204);
		expect(await objectExists(doomed.body.imageUrl)).toBe(false);
		expect((await download(doomed.body.imageUrl)).status).toBe(404);
		// Nothing acknowledged was lost.
		expect((await download(kept.body.imageUrl)).status).toBe(200);
		expect((await uploadFile(server, await makeImage('png', 16, 16))).status).toBe(200);
	});
});

describe('PostgreSQL down (--database-url, S3 storage)', () => {
	let postgres: TestPostgres;
	let s3: S3TestServer;
	let server: RunningServer;
	beforeAll(async () => {
		[postgres, s3] = await Promise.all([startTestPostgres(), startS3rver()]);
		const databaseUrl = await postgres.createDatabase();
		server = await startServer({
			args: ['--database-url', databaseUrl, '--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style'],
			env,
		});
	});
	afterAll(async () => {
		await server?.stop({ removeData: true });
		await Promise.all([postgres?.stop(), s3?.stop()]);
	});

	it('every route needing it answers 503 with Retry-After, health is degraded; afterwards all works and nothing is lost', async () => {
		const kept = await postJson(server, '/v1/uploads', { file: (await makeImage('png', 24, 24)).toString('base64') });
		expect(kept.status).toBe(200);

		await postgres.halt();
		try {
			expectUnavailable(await uploadFile(server, await makeImage('png', 16, 16)));
			expectUnavailable(await postJson(server, '/v1/uploads', { file: (await makeImage('png', 16, 16)).toString('base64') }));
			expectUnavailable(await call(server, `/v1/files/${kept.body.id}`));
			expectUnavailable(await call(server, `/v1/files/${kept.body.id}`, { method: 'DELETE' }));
			expectUnavailable(await call(server, '/v1/usage'));
			const file = await call(server, new URL(kept.body.imageUrl).pathname, { auth: null });
			expectUnavailable(file);
			const degraded = await health(server);
			expect(degraded.status).toBe(503);
			expect(degraded.body.status).toBe('degraded');
			expect(JSON.stringify(degraded.body)).not.toMatch(INTERNAL_ADDRESS);
			expect(JSON.stringify(degraded.body)).not.toMatch(/lastError/);
		} finally {
			await postgres.resume();
		}

		expect(await eventually(async () => (await health(server)).status === 200, 20_000)).toBe(true);
		expect((await download(kept.body.imageUrl)).status).toBe(200);
		expect((await uploadFile(server, await makeImage('png', 16, 16))).status).toBe(200);
	});

	it('a statement that hangs (a locked table) fails after --database-timeout-seconds with a 503, not never', async () => {
		const databaseUrl = await postgres.createDatabase();
		const quick = await startServer({
			args: ['--database-url', databaseUrl, '--database-timeout-seconds', '1', '--storage', 's3', '--s3-bucket', s3.bucket, '--s3-endpoint', s3.endpoint, '--s3-force-path-style'],
			env,
		});
		const locker = new Client({ connectionString: databaseUrl });
		await locker.connect();
		try {
			await locker.query('BEGIN');
			await locker.query('LOCK TABLE files IN ACCESS EXCLUSIVE MODE');
			const started = Date.now();
			expectUnavailable(await postJson(quick, '/v1/uploads', { file: (await makeImage('png', 16, 16)).toString('base64') }));
			expect(Date.now() - started).toBeLessThan(10_000);
			await locker.query('ROLLBACK');
			expect((await postJson(quick, '/v1/uploads', { file: (await makeImage('png', 16, 16)).toString('base64') })).status).toBe(200);
		} finally {
			await locker.end();
			await quick.stop({ removeData: true });
		}
	});

	it('a replica stopped while its usage lines cannot be written keeps them on disk; its next start writes them', async () => {
		const databaseUrl = await postgres.createDatabase();
		const args = ['--database-url', databaseUrl];
		const first = await startServer({ args });
		let again: RunningServer | undefined;
		try {
			await postgres.admin(databaseUrl, 'ALTER TABLE usage_days RENAME TO usage_days_away');
			// The generation is answered (the ledger's wait is bounded); its billing line stays queued.
			const generated = await postJson(first, '/v1/images/generations', { model: 'p-image', prompt: 'Billed once', response_format: 'b64_json' });
			expect(generated.status).toBe(200);
			expect(await eventually(async () => (await health(first)).body.status === 'degraded', 10_000)).toBe(true);
			await first.stop();
			expect(first.output()).toMatch(/kept on disk, written at the next start/);

			await postgres.admin(databaseUrl, 'ALTER TABLE usage_days_away RENAME TO usage_days');
			again = await startServer({ args, dataDir: first.dataDir, apiKey: first.apiKey });
			const counted = async () => (await call(again!, '/v1/usage')).body?.total?.images === 1;
			expect(await eventually(counted, 10_000)).toBe(true);
			expect((await call(again, '/v1/usage')).body.total.cost_usd).toBe(generated.body.usage.cost_usd);
		} finally {
			await again?.stop({ removeData: true });
			await first.stop({ removeData: !again });
		}
	});

	it('the usage ledger writes again within about a second of the database coming back, however long the outage', async () => {
		const database = await openDatabase(await postgres.createDatabase());
		const errors: unknown[] = [];
		const ledger = new SqlUsageLedger(database, { log: { error: (details) => errors.push(details) } });
		try {
			await postgres.halt();
			let durable = false;
			let back = 0;
			try {
				void ledger.record({ apiKeyId: 'key', model: 'p-image', images: 1, costUsd: 0.01, at: new Date(), requestId: 'outage-1' }).then(() => {
					durable = true;
				});
				// A long outage: a doubling backoff would have grown well past it by now.
				await new Promise((resolve) => setTimeout(resolve, 15_000));
				expect(durable).toBe(false);
				expect(ledger.health().status).toBe('degraded');
			} finally {
				await postgres.resume();
				back = Date.now();
			}
			expect(await eventually(() => durable, 20_000, 20)).toBe(true);
			// Within about a second of its engine's return (generous for a loaded machine).
			expect(Date.now() - back).toBeLessThan(2_500);
			expect(ledger.health().status).toBe('ok');
		} finally {
			await ledger.close();
			await database.close();
		}
	});
});
