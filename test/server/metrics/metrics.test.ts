/**
 * GET /metrics on the built CLI: who may read it, and the values after real requests, read back
 * with a Prometheus text parser. No file id, key or raw URL ever becomes part of the text.
 */
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { MODELS } from '../../../core/models';
import type { ServiceUnderTest } from '../../helpers/server';
import { startInProcessServer } from '../support/app';
import { call, createManagedKey, postJson, uploadFile } from '../support/http';
import { makeImage } from '../support/media';

const ADMIN_KEY = 'admin-key-0123456789abcdef';
const PRICE = MODELS['p-image'].priceUsd;

let server: ServiceUnderTest;
let withoutAdmin: ServiceUnderTest;

beforeAll(async () => {
	[server, withoutAdmin] = await Promise.all([startInProcessServer({ args: ['--admin-key', ADMIN_KEY] }), startInProcessServer()]);
});

afterAll(async () => {
	await Promise.all([server, withoutAdmin].map((each) => each?.stop({ removeData: true })));
});

async function scrape(target = server): Promise<{ text: string; families: ReturnType<typeof parsePrometheusTextFormat> }> {
	const answer = await call(target, '/metrics', { auth: `Bearer ${ADMIN_KEY}` });
	expect(answer.status).toBe(200);
	expect(answer.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
	return { text: answer.body as string, families: parsePrometheusTextFormat(answer.body as string) };
}

function value(families: ReturnType<typeof parsePrometheusTextFormat>, name: string, labels: Record<string, string> = {}): number | undefined {
	const sample = families.find((family) => family.name === name)?.metrics.find((each) => Object.entries(labels).every(([key, wanted]) => each.labels?.[key] === wanted));
	return sample ? Number(sample.value) : undefined;
}

/**
 * A labelled histogram's observation count. The parser folds a histogram's samples into one
 * bucket map keyed by `le` and drops their other labels, so the family's type comes from it and
 * the count per label set from its `_count` line.
 */
function histogramCount(families: ReturnType<typeof parsePrometheusTextFormat>, text: string, name: string, labels: Record<string, string>): number | undefined {
	expect(families.find((family) => family.name === name)?.type).toBe('HISTOGRAM');
	const wanted = Object.entries(labels).map(([key, each]) => `${key}="${each}"`);
	const line = text.split('\n').find((each) => each.startsWith(`${name}_count{`) && wanted.every((pair) => each.includes(pair)));
	return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('access', () => {
	test('only the admin key reads it', async () => {
		expect((await call(server, '/metrics', { auth: null })).status).toBe(401);
		const withApiKey = await call(server, '/metrics');
		expect(withApiKey.status).toBe(403);
		expect(withApiKey.body.error.code).toBe('admin_only');
		expect((await call(server, '/metrics', { auth: 'Bearer wrong-key-0123456789' })).status).toBe(401);
	});

	test('without --admin-key there is no /metrics', async () => {
		expect((await call(withoutAdmin, '/metrics', { auth: `Bearer ${ADMIN_KEY}` })).status).toBe(404);
	});
});

describe('after real requests', () => {
	let fileId: string;
	let managedSecret: string;
	let families: ReturnType<typeof parsePrometheusTextFormat>;
	let text: string;
	const strayPath = '/no-such-route-7f3a9c';
	const image = makeImage('png', 40, 30);

	beforeAll(async () => {
		const bytes = await image;
		const uploaded = await uploadFile(server, bytes, {}, { fileName: 'a.png', mimeType: 'image/png' });
		expect(uploaded.status).toBe(200);
		fileId = uploaded.body.id;
		expect((await fetch(uploaded.body.imageUrl)).status).toBe(200);
		expect((await call(server, `/v1/files/${fileId}`)).status).toBe(200);
		expect((await uploadFile(server, Buffer.alloc(0))).status).toBe(400);
		expect((await call(server, strayPath)).status).toBe(404);
		expect((await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'A kite', response_format: 'b64_json' })).status).toBe(200);

		// A managed key with room for exactly one image: the second generation is a budget refusal.
		managedSecret = (await createManagedKey(server, ADMIN_KEY, { name: 'one image', budget_usd: PRICE })).key;
		const asManaged = { auth: `Bearer ${managedSecret}` };
		expect((await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'One', response_format: 'b64_json' }, asManaged)).status).toBe(200);
		const refused = await postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'Two', response_format: 'b64_json' }, asManaged);
		expect(refused.status).toBe(402);
		({ text, families } = await scrape());
	});

	test('process metrics are there', () => {
		expect(value(families, 'process_cpu_user_seconds_total')).toBeGreaterThan(0);
		expect(value(families, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
	});

	test('HTTP requests are counted under their route pattern; unmatched ones under one label', () => {
		expect(value(families, 'imagegen_http_requests_total', { method: 'POST', route: '/v1/uploads', status: '200' })).toBe(1);
		expect(value(families, 'imagegen_http_requests_total', { method: 'POST', route: '/v1/uploads', status: '400' })).toBe(1);
		expect(value(families, 'imagegen_http_requests_total', { method: 'GET', route: '/v1/files/:id', status: '200' })).toBe(1);
		expect(value(families, 'imagegen_http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
		expect(value(families, 'imagegen_http_requests_total', { method: 'POST', route: '/v1/images/generations', status: '402' })).toBe(1);
		expect(histogramCount(families, text, 'imagegen_http_request_duration_seconds', { method: 'POST', route: '/v1/images/generations' })).toBe(3);
	});

	test('generations by model, provider and outcome, their duration and cost', () => {
		expect(value(families, 'imagegen_generations_total', { model: 'p-image', provider: 'sandbox', outcome: 'success' })).toBe(2);
		expect(histogramCount(families, text, 'imagegen_generation_duration_seconds', { model: 'p-image', provider: 'sandbox' })).toBe(2);
		expect(value(families, 'imagegen_generation_cost_usd_total', { model: 'p-image' })).toBeCloseTo(2 * PRICE, 9);
	});

	test('each generated image marked once, the sandbox\'s small ones on the event loop', () => {
		expect(histogramCount(families, text, 'imagegen_marking_duration_seconds', { thread: 'event_loop' })).toBe(2);
		expect(histogramCount(families, text, 'imagegen_marking_duration_seconds', { thread: 'worker' })).toBeUndefined();
	});

	test('uploads by kind and outcome, and their bytes', async () => {
		expect(value(families, 'imagegen_uploads_total', { kind: 'image', outcome: 'success' })).toBe(1);
		expect(value(families, 'imagegen_uploads_total', { kind: 'unknown', outcome: 'empty_file' })).toBe(1);
		expect(value(families, 'imagegen_upload_bytes_total', { kind: 'image' })).toBe((await image).length);
	});

	test('sweeper passes, their duration and the last good one', () => {
		expect(value(families, 'imagegen_sweeps_total', { outcome: 'success' })).toBeGreaterThanOrEqual(1);
		expect(Number(/^imagegen_sweep_duration_seconds_count (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
		expect(Math.abs(value(families, 'imagegen_last_sweep_success_timestamp_seconds')! - Date.now() / 1000)).toBeLessThan(600);
	});

	test('budget refusals and the usage ledger backlog', () => {
		expect(value(families, 'imagegen_budget_refusals_total')).toBe(1);
		expect(value(families, 'imagegen_usage_ledger_pending')).toBe(0);
	});

	test('jobs by status: the two generations succeeded, the refused one was never a job', () => {
		expect(value(families, 'imagegen_jobs', { status: 'succeeded' })).toBe(2);
		for (const status of ['queued', 'running', 'failed', 'canceled']) expect(value(families, 'imagegen_jobs', { status })).toBe(0);
	});

	test('no file id, key or raw path is in the text', () => {
		for (const secret of [fileId, server.apiKey, ADMIN_KEY, managedSecret, strayPath]) expect(text).not.toContain(secret);
	});
});
