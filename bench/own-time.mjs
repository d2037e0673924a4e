// The service's own time, as gateway benchmarks measure it: one request at a time on loopback, the
// same instant host (bench/fake-upstream.mjs, a 16 KB 1024 px PNG) called directly and through the
// service (`upstream` provider), for hosted (`url`) and inline (`b64_json`) answers, with
// `--provenance off` and marked (the default). Direct and service calls alternate, so the
// machine's drift falls on both alike; each figure is the service's percentile minus the direct
// call's. The service keeps every durability promise it makes by default (files and rows synced).
// For scale, the same for a bare Fastify route forwarding to the host (bench/bare-forwarder.mjs):
// what any Node.js proxy adds here.
//
//   node bench/own-time.mjs [--requests 400] [--warmup 100]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, ROOT, percentile, round, startImagegenServer, startProcess } from './lib.mjs';

const BODY = { model: 'p-image', prompt: 'a lighthouse at dusk', aspect_ratio: '1:1', output_format: 'png' };

/** Milliseconds for one POST whose whole answer is read; throws on any status but 200. */
async function timedCall(url, headers, body) {
	const started = performance.now();
	const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
	await response.arrayBuffer();
	const elapsed = performance.now() - started;
	if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
	return elapsed;
}

/** p50 and p99 of the direct calls and of the service's, and what the service adds to each. */
function summary(direct, service) {
	const sorted = (values) => [...values].sort((a, b) => a - b);
	const [d, s] = [sorted(direct), sorted(service)];
	const figures = (values) => ({ p50: round(percentile(values, 50)), p99: round(percentile(values, 99)) });
	const [directFigures, serviceFigures] = [figures(d), figures(s)];
	return {
		direct: directFigures,
		service: serviceFigures,
		addedP50: round(serviceFigures.p50 - directFigures.p50),
		addedP99: round(serviceFigures.p99 - directFigures.p99),
	};
}

export async function ownTimeBench({ requests = 400, warmup = 100 } = {}) {
	const upstream = await startProcess(join(ROOT, 'bench', 'fake-upstream.mjs'), ['0']);
	const env = { UPSTREAM_BASE_URL: `${upstream.origin}/v1`, UPSTREAM_API_KEY: 'upstream-key-123' };
	const services = {};
	const dataDirs = [];
	const bare = await startProcess(join(ROOT, 'bench', 'bare-forwarder.mjs'), [upstream.origin]);
	try {
		for (const [name, extra] of [['unmarked', ['--provenance', 'off']], ['marked', []]]) {
			const dataDir = mkdtempSync(join(tmpdir(), `imagegen-bench-own-time-${name}-`));
			dataDirs.push(dataDir);
			services[name] = await startImagegenServer(dataDir, ['--providers', 'p-image=upstream', ...extra], env);
		}
		const direct = () => timedCall(`${upstream.origin}/v1/images/generations`, { authorization: 'Bearer upstream-key-123' }, { ...BODY, response_format: 'b64_json' });
		// Warm-up, then `requests` pairs, the direct call first in each.
		const againstDirect = async (other) => {
			const times = { direct: [], other: [] };
			for (let i = 0; i < warmup + requests; i++) {
				const pair = [await direct(), await other()];
				if (i < warmup) continue;
				times.direct.push(pair[0]);
				times.other.push(pair[1]);
			}
			return summary(times.direct, times.other);
		};
		const results = {};
		results['bare forwarder'] = await againstDirect(() => timedCall(`${bare.origin}/v1/images/generations`, { authorization: 'Bearer upstream-key-123' }, { ...BODY, response_format: 'b64_json' }));
		for (const [name, service] of Object.entries(services)) {
			for (const responseFormat of ['url', 'b64_json']) {
				results[`${name} ${responseFormat}`] = await againstDirect(() => timedCall(`${service.origin}/v1/images/generations`, { authorization: `Bearer ${API_KEY}` }, { ...BODY, response_format: responseFormat }));
			}
		}
		return { requests, results };
	} finally {
		await Promise.all([...Object.values(services).map((service) => service.stop()), bare.stop(), upstream.stop()]);
		for (const dataDir of dataDirs) rmSync(dataDir, { recursive: true, force: true });
	}
}

if (import.meta.url === `file://${process.argv[1]}`) {
	const option = (name) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : undefined);
	const result = await ownTimeBench({ requests: option('--requests'), warmup: option('--warmup') });
	for (const [row, figures] of Object.entries(result.results)) {
		process.stdout.write(`${row}: added p50 ${figures.addedP50} ms, p99 ${figures.addedP99} ms (direct ${figures.direct.p50} / ${figures.direct.p99}, service ${figures.service.p50} / ${figures.service.p99})\n`);
	}
	process.stdout.write(`${JSON.stringify(result)}\n`);
}
