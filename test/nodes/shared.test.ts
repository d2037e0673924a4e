/** The pure parts the nodes share: ordered concurrency, retry timing and the streamed multipart body. */
import { mapInOrder } from '../../nodes/shared/concurrency';
import { StreamedMultipartBody } from '../../nodes/shared/multipart';
import { DEFAULT_RETRY_POLICY, errorCodeOf, parseRetryAfter, retryDelayMs, shouldRetry } from '../../core/retry-policy';

const tick = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('mapInOrder', () => {
	test('answers in input order whatever the finishing order, with at most `limit` running', async () => {
		let running = 0;
		let peak = 0;
		const delays = [30, 5, 20, 1, 15, 2, 25, 3];
		const results = await mapInOrder(delays, 3, async (delay, index) => {
			running++;
			peak = Math.max(peak, running);
			await tick(delay);
			running--;
			return index * 10;
		});
		expect(results).toEqual([0, 10, 20, 30, 40, 50, 60, 70]);
		expect(peak).toBe(3);
	});

	test('after a failure nothing new starts, work in flight settles, and the lowest failing index is thrown', async () => {
		const started: number[] = [];
		let settled = 0;
		const run = mapInOrder([0, 1, 2, 3, 4, 5, 6, 7], 2, async (value) => {
			started.push(value);
			await tick(value === 1 ? 1 : 20);
			settled++;
			if (value === 1) throw new Error('item 1 failed');
			return value;
		});
		await expect(run).rejects.toThrow('item 1 failed');
		expect(started).toEqual([0, 1]);
		expect(settled).toBe(2);
	});

	test('empty input and odd limits', async () => {
		expect(await mapInOrder([], 5, async () => 1)).toEqual([]);
		expect(await mapInOrder([1, 2], 0, async (value) => value)).toEqual([1, 2]);
		expect(await mapInOrder([1, 2], 99, async (value) => value)).toEqual([1, 2]);
	});
});

describe('retry policy', () => {
	test('Retry-After as seconds or as an HTTP date', () => {
		expect(parseRetryAfter('3')).toBe(3000);
		expect(parseRetryAfter(['0.5'])).toBe(500);
		const now = Date.parse('2026-11-23T00:00:00Z');
		expect(parseRetryAfter('Mon, 23 Nov 2026 00:00:04 GMT', now)).toBe(4000);
		expect(parseRetryAfter('Sun, 22 Nov 2026 00:00:00 GMT', now)).toBe(0);
		expect(parseRetryAfter(undefined)).toBeUndefined();
		expect(parseRetryAfter('soon')).toBeUndefined();
	});

	test('the wait follows Retry-After, capped; without it, jittered exponential backoff', () => {
		expect(retryDelayMs(1, 2000, DEFAULT_RETRY_POLICY)).toBe(2000);
		expect(retryDelayMs(1, 3_600_000, DEFAULT_RETRY_POLICY)).toBe(DEFAULT_RETRY_POLICY.maxDelayMs);
		expect(retryDelayMs(1, undefined, DEFAULT_RETRY_POLICY, () => 0)).toBe(500);
		expect(retryDelayMs(1, undefined, DEFAULT_RETRY_POLICY, () => 1)).toBe(1000);
		expect(retryDelayMs(3, undefined, DEFAULT_RETRY_POLICY, () => 1)).toBe(4000);
		expect(retryDelayMs(20, undefined, DEFAULT_RETRY_POLICY, () => 1)).toBe(DEFAULT_RETRY_POLICY.maxDelayMs);
	});

	test('only 429 and 5xx are retried, and only up to the limit', () => {
		expect([429, 500, 502, 503, 504].every((status) => shouldRetry(status, 1, DEFAULT_RETRY_POLICY))).toBe(true);
		expect([400, 401, 404, 413, 415, 507].some((status) => shouldRetry(status, 1, DEFAULT_RETRY_POLICY))).toBe(false);
		expect(shouldRetry(429, 3, DEFAULT_RETRY_POLICY)).toBe(true);
		expect(shouldRetry(429, 4, DEFAULT_RETRY_POLICY)).toBe(false);
		expect(shouldRetry(503, 1, { ...DEFAULT_RETRY_POLICY, maxRetries: 0 })).toBe(false);
		// A repeat still running on the service is worth waiting for; any other conflict is not.
		expect(shouldRetry(409, 1, DEFAULT_RETRY_POLICY, 'idempotency_in_progress')).toBe(true);
		expect(shouldRetry(409, 4, DEFAULT_RETRY_POLICY, 'idempotency_in_progress')).toBe(false);
		expect(shouldRetry(409, 1, DEFAULT_RETRY_POLICY, 'idempotency_key_reused')).toBe(false);
		expect(shouldRetry(409, 1, DEFAULT_RETRY_POLICY)).toBe(false);
		expect(errorCodeOf({ error: { code: 'idempotency_in_progress' } })).toBe('idempotency_in_progress');
		expect([null, 'text', { error: 'x' }, { error: { code: 3 } }].map(errorCodeOf)).toEqual([undefined, undefined, undefined, undefined]);
	});
});

describe('StreamedMultipartBody', () => {
	async function collect(body: StreamedMultipartBody): Promise<Buffer> {
		const chunks: Uint8Array[] = [];
		for await (const chunk of body.stream()) chunks.push(chunk);
		return Buffer.concat(chunks);
	}

	async function* chunked(bytes: Buffer, size: number) {
		for (let offset = 0; offset < bytes.length; offset += size) yield bytes.subarray(offset, offset + size);
	}

	test('declares the exact size it streams, and reads as a standard form', async () => {
		const file = Buffer.from('\x89PNG fake image bytes\r\n--not-a-boundary');
		const body = new StreamedMultipartBody(
			{ field: 'file', fileName: 'pic "1".png', contentType: 'image/png', size: file.length, content: chunked(file, 5) },
			[{ field: 'output_format', value: 'webp' }],
		);
		const bytes = await collect(body);
		expect(bytes.length).toBe(body.size);
		expect(Object.prototype.toString.call(body)).toBe('[object Blob]');
		const form = await new Response(bytes, { headers: { 'content-type': body.type } }).formData();
		expect(form.get('output_format')).toBe('webp');
		const part = form.get('file') as File;
		expect(part.type).toBe('image/png');
		expect(Buffer.from(await part.arrayBuffer()).equals(file)).toBe(true);
	});

	test('several files in order, each with its own part, after the fields', async () => {
		const first = Buffer.from('first image');
		const second = Buffer.from('second\r\nimage');
		const body = new StreamedMultipartBody(
			[
				{ field: 'image[]', fileName: 'a.png', contentType: 'image/png', size: first.length, content: first },
				{ field: 'image[]', fileName: 'b.webp', contentType: 'image/webp', size: second.length, content: chunked(second, 3) },
			],
			[{ field: 'model', value: 'gpt-image-1' }],
		);
		const bytes = await collect(body);
		expect(bytes.length).toBe(body.size);
		const form = await new Response(bytes, { headers: { 'content-type': body.type } }).formData();
		expect(form.get('model')).toBe('gpt-image-1');
		const parts = form.getAll('image[]') as File[];
		expect(parts.map((part) => [part.name, part.type])).toEqual([['a.png', 'image/png'], ['b.webp', 'image/webp']]);
		expect(Buffer.from(await parts[1]!.arrayBuffer()).equals(second)).toBe(true);
	});

	test('a new boundary each time', () => {
		const make = () => new StreamedMultipartBody({ field: 'file', fileName: 'a', contentType: 'video/mp4', size: 1, content: Buffer.from('a') }).type;
		expect(make()).not.toBe(make());
	});
});
