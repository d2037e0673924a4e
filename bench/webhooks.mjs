// Webhooks never slow generations: hosted generations through the `upstream` provider (a host that
// answers at once) with a `webhook_url` each, whose receiver accepts the connection and never
// answers, against the same generations without one, the same service, alternating. Every job's
// end is written to the outbox and its delivery hangs until the attempt's time limit; the
// deliveries pile up over the run, as they would behind a receiver that is down. Meanwhile another
// key submits a generation every 200 ms (async, 202) with a `webhook_url` to a receiver that
// answers at once: how many of its deliveries arrive, and how long after the 202, says whether the
// hanging receiver holds up other keys' webhooks.
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, generationLoad, percentile, round, startImagegenServer, startProcess } from './lib.mjs';

const OTHER_KEY = 'bench-other-key-0123456789';
const OTHER_EVERY_MS = 200;
/** How long after the last round a delivery to the healthy receiver still counts. */
const GRACE_MS = 2_000;

/** A receiver that takes every request and never answers; answers its URL, how many arrived, and a stop. */
async function hangingReceiver() {
	const held = new Set();
	let received = 0;
	const server = createServer((request, response) => {
		received += 1;
		held.add(response);
		request.resume();
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${server.address().port}/hook`,
		received: () => received,
		stop: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
	};
}

/** A receiver that answers 204 at once and notes when each generation's delivery arrived. */
async function healthyReceiver() {
	const arrivedAt = new Map();
	const server = createServer((request, response) => {
		const chunks = [];
		request.on('data', (chunk) => chunks.push(chunk));
		request.on('end', () => {
			arrivedAt.set(JSON.parse(Buffer.concat(chunks).toString('utf8')).data.id, performance.now());
			response.writeHead(204).end();
		});
	});
	await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		url: `http://127.0.0.1:${server.address().port}/hook`,
		arrivedAt,
		stop: () => new Promise((resolve) => (server.closeAllConnections(), server.close(resolve))),
	};
}

/** Another key's generations, one every OTHER_EVERY_MS until `stop`; notes when each was accepted. */
function otherKeyTrickle(origin, webhookUrl) {
	const answeredAt = new Map();
	let running = true;
	const done = (async () => {
		while (running) {
			const next = new Promise((resolve) => setTimeout(resolve, OTHER_EVERY_MS));
			const response = await fetch(`${origin}/v1/images/generations`, {
				method: 'POST',
				headers: { authorization: `Bearer ${OTHER_KEY}`, 'content-type': 'application/json', prefer: 'respond-async' },
				body: JSON.stringify({ model: 'p-image', prompt: 'A lighthouse at dawn', aspect_ratio: '1:1', response_format: 'url', webhook_url: webhookUrl }),
			});
			const answered = performance.now();
			const body = await response.json();
			if (response.ok) answeredAt.set(body.id, answered);
			await next;
		}
	})();
	return { answeredAt, stop: () => ((running = false), done) };
}

/** Of the other key's generations, how many deliveries arrived and how long after the 202. */
function healthyDeliveries(answeredAt, arrivedAt) {
	const delays = [...answeredAt].filter(([id]) => arrivedAt.has(id)).map(([id, at]) => Math.max(0, arrivedAt.get(id) - at)).sort((a, b) => a - b);
	return { sent: answeredAt.size, received: delays.length, p50Ms: round(percentile(delays, 50) ?? NaN, 1), maxMs: round(delays[delays.length - 1] ?? NaN, 1) };
}

export async function webhooksBench({ connections = 16, seconds = 5, rounds = 3 } = {}) {
	const dir = mkdtempSync(join(tmpdir(), 'imagegen-bench-webhooks-'));
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const receiver = await hangingReceiver();
	const healthy = await healthyReceiver();
	const server = await startImagegenServer(dir, ['--api-keys', `${API_KEY},${OTHER_KEY}`, '--providers', 'p-image=upstream', '--provenance', 'off', '--webhook-allow-private'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
	const load = (fields, time = seconds) => generationLoad(`${server.origin}/v1/images/generations`, { responseFormat: 'url', connections, seconds: time, pid: server.pid, fields });
	const hooked = { webhook_url: receiver.url };
	try {
		await load({}, 2);
		await load(hooked, 2);
		const measured = [];
		const other = otherKeyTrickle(server.origin, healthy.url);
		for (let i = 0; i < rounds; i++) {
			const plain = await load({});
			const withHooks = await load(hooked);
			measured.push({ plain, hooked: withHooks, ratio: round(withHooks.rps / plain.rps) });
		}
		await other.stop();
		await new Promise((resolve) => setTimeout(resolve, GRACE_MS));
		const otherKey = healthyDeliveries(other.answeredAt, healthy.arrivedAt);
		const median = [...measured].sort((x, y) => x.ratio - y.ratio)[Math.floor(rounds / 2)];
		const errors = measured.reduce((sum, r) => sum + r.plain.errors + r.hooked.errors, 0);
		return { connections, seconds, ...median, rounds: measured, errors, deliveriesReceived: receiver.received(), otherKey };
	} finally {
		await Promise.all([server.stop(), upstream.stop(), receiver.stop(), healthy.stop()]);
		rmSync(dir, { recursive: true, force: true });
	}
}
