// Generations as jobs. First, what answering at once costs: POST /v1/images/generations with
// `Prefer: respond-async` (202 and the job, which runs on) against the synchronous call (200 with
// the image), the same sandbox service, no delay; between runs the service finishes every job it
// accepted, so each run starts idle. Then 1,000 jobs in flight on a slow host (the sandbox waiting
// 5 minutes before it draws): the service's resident memory, its event loop's p99 delay
// (prom-client's nodejs_eventloop_lag_p99_seconds, reset by each scrape) and the latency of a cheap
// request (GET /v1/models) while they all run, against the same service idle, each over 25 s so that
// the busy window holds a whole round of lease renewals (every job renews every 20 s); then every
// job is canceled and must end canceled and uncharged. The async figure is acceptance: its images
// are drawn after the 202, and the next run waits for them.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { API_KEY, generationLoad, percentile, residentBytes, round, startImagegenServer } from './lib.mjs';

const ADMIN_KEY = 'bench-admin-key-0123456789abcdef';
const SLOW_HOST_MS = 300_000;
const OBSERVED_SECONDS = 25;
const ASYNC = { prefer: 'respond-async' };
const auth = (key = API_KEY) => ({ authorization: `Bearer ${key}` });
const GENERATION = { model: 'p-image', prompt: 'A lighthouse at dawn', aspect_ratio: '1:1', response_format: 'url' };

async function json(response) {
	const body = await response.json();
	if (!response.ok) throw new Error(`${response.url} answered ${response.status}: ${JSON.stringify(body)}`);
	return body;
}

/** The service's gauge of jobs per status, and its event loop's p99 delay (ms) since the last scrape. */
async function scrape(origin) {
	const text = await (await fetch(`${origin}/metrics`, { headers: auth(ADMIN_KEY) })).text();
	const jobs = {};
	for (const [, status, count] of text.matchAll(/^imagegen_jobs\{status="(\w+)"\} (\d+)/gm)) jobs[status] = Number(count);
	const lag = /^nodejs_eventloop_lag_p99_seconds (\S+)/m.exec(text);
	return { jobs, loopP99Ms: lag ? round(Number(lag[1]) * 1000, 1) : NaN };
}

async function until(check, what, timeoutMs = 600_000) {
	const deadline = Date.now() + timeoutMs;
	while (!(await check())) {
		if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
}

/** Runs `work(i)` for i < count, `concurrency` at a time; answers the results in order. */
async function pool(count, concurrency, work) {
	const results = new Array(count);
	let next = 0;
	await Promise.all(Array.from({ length: concurrency }, async () => {
		while (next < count) {
			const i = next++;
			results[i] = await work(i);
		}
	}));
	return results;
}

/** RSS, event-loop p99 and sequential GET /v1/models latencies for `seconds`. */
async function observe(server, seconds) {
	await scrape(server.origin);
	const latencies = [];
	const end = Date.now() + seconds * 1000;
	while (Date.now() < end) {
		const started = performance.now();
		await json(await fetch(`${server.origin}/v1/models`, { headers: auth() }));
		latencies.push(performance.now() - started);
	}
	latencies.sort((a, b) => a - b);
	const { loopP99Ms } = await scrape(server.origin);
	return { rssMb: round(residentBytes(server.pid) / 1024 / 1024, 1), loopP99Ms, modelsP50Ms: round(percentile(latencies, 50), 2), modelsP99Ms: round(percentile(latencies, 99), 2), probes: latencies.length };
}

async function submitBench(server, { connections, seconds, rounds }) {
	const url = `${server.origin}/v1/images/generations`;
	const idle = async () => {
		const { jobs } = await scrape(server.origin);
		return !jobs.queued && !jobs.running;
	};
	const load = async (headers, time = seconds) => {
		const run = await generationLoad(url, { responseFormat: 'url', connections, seconds: time, pid: server.pid, headers });
		await until(idle, 'the accepted jobs to finish');
		return run;
	};
	await load({}, 2);
	await load(ASYNC, 2);
	const measured = [];
	for (let i = 0; i < rounds; i++) {
		const sync = await load({});
		const async = await load(ASYNC);
		measured.push({ sync, async, ratio: round(async.rps / sync.rps) });
	}
	const median = [...measured].sort((x, y) => x.ratio - y.ratio)[Math.floor(rounds / 2)];
	const errors = measured.reduce((sum, r) => sum + r.sync.errors + r.async.errors, 0);
	return { ...median, rounds: measured, errors };
}

async function inFlightBench(server, { jobs, concurrency, seconds }) {
	const origin = server.origin;
	const idle = await observe(server, seconds);
	const submitted = await pool(jobs, concurrency, async () => {
		const response = await fetch(`${origin}/v1/images/generations`, { method: 'POST', headers: { ...auth(), ...ASYNC, 'content-type': 'application/json' }, body: JSON.stringify(GENERATION) });
		if (response.status !== 202) throw new Error(`async submit answered ${response.status}: ${await response.text()}`);
		return (await response.json()).id;
	});
	await until(async () => (await scrape(origin)).jobs.running === jobs, `${jobs} jobs running`);
	const busy = await observe(server, seconds);
	const canceled = await pool(jobs, concurrency, async (i) => (await json(await fetch(`${origin}/v1/generations/${submitted[i]}/cancel`, { method: 'POST', headers: auth() }))).status);
	const fetched = await pool(jobs, concurrency, async (i) => (await json(await fetch(`${origin}/v1/generations/${submitted[i]}`, { headers: auth() }))).status);
	const usage = await json(await fetch(`${origin}/v1/usage`, { headers: auth() }));
	const allCanceled = [...canceled, ...fetched].every((status) => status === 'canceled');
	return {
		jobs,
		idle,
		busy,
		rssGrowthMb: round(busy.rssMb - idle.rssMb, 1),
		modelsRatio: round(busy.modelsP50Ms / idle.modelsP50Ms),
		allCanceled,
		charged: usage.total,
		uncharged: usage.total.images === 0 && usage.total.cost_usd === 0,
	};
}

export async function jobsBench({ connections = 16, seconds = 5, rounds = 3, jobs = 1000 } = {}) {
	const dirs = [mkdtempSync(join(tmpdir(), 'imagegen-bench-jobs-')), mkdtempSync(join(tmpdir(), 'imagegen-bench-jobs-slow-'))];
	const common = ['--admin-key', ADMIN_KEY];
	const fast = await startImagegenServer(dirs[0], common);
	const slow = await startImagegenServer(dirs[1], [...common, '--sandbox-delay-ms', String(SLOW_HOST_MS), '--generation-timeout-seconds', String(SLOW_HOST_MS / 1000 + 60)]);
	try {
		const submit = await submitBench(fast, { connections, seconds, rounds });
		await fast.stop();
		const inFlight = await inFlightBench(slow, { jobs, concurrency: connections, seconds: OBSERVED_SECONDS });
		return { connections, seconds, submit, inFlight };
	} finally {
		await Promise.all([fast.stop(), slow.stop()]);
		for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
	}
}
