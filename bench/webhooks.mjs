// Webhooks never slow generations: hosted generations through the `upstream` provider (a host that
// answers at once) with a `webhook_url` each, whose receiver accepts the connection and never
// answers, against the same generations without one, the same service, alternating. Every job's
// end is written to the outbox and its delivery hangs until the attempt's time limit; the
// deliveries pile up over the run, as they would behind a receiver that is down.
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT, generationLoad, round, startImagegenServer, startProcess } from './lib.mjs';

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

export async function webhooksBench({ connections = 16, seconds = 5, rounds = 3 } = {}) {
	const dir = mkdtempSync(join(tmpdir(), 'imagegen-bench-webhooks-'));
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const receiver = await hangingReceiver();
	const server = await startImagegenServer(dir, ['--providers', 'p-image=upstream', '--provenance', 'off', '--webhook-allow-private'], { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' });
	const load = (fields, time = seconds) => generationLoad(`${server.origin}/v1/images/generations`, { responseFormat: 'url', connections, seconds: time, pid: server.pid, fields });
	const hooked = { webhook_url: receiver.url };
	try {
		await load({}, 2);
		await load(hooked, 2);
		const measured = [];
		for (let i = 0; i < rounds; i++) {
			const plain = await load({});
			const withHooks = await load(hooked);
			measured.push({ plain, hooked: withHooks, ratio: round(withHooks.rps / plain.rps) });
		}
		const median = [...measured].sort((x, y) => x.ratio - y.ratio)[Math.floor(rounds / 2)];
		const errors = measured.reduce((sum, r) => sum + r.plain.errors + r.hooked.errors, 0);
		return { connections, seconds, ...median, rounds: measured, errors, deliveriesReceived: receiver.received() };
	} finally {
		await Promise.all([server.stop(), upstream.stop(), receiver.stop()]);
		rmSync(dir, { recursive: true, force: true });
	}
}
