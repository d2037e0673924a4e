/**
 * `Server-Timing` on the answers of POST /v1/images/generations, against a host that answers after
 * a known delay: the host's share is at least that delay, the marking is counted apart and absent
 * with `--provenance off` (nothing is marked), and the total covers both. A replay generated nothing
 * now, so it has no timings.
 */
import type { InProcessServer } from '../support/app';
import { startInProcessServer } from '../support/app';
import { startCountingUpstream, type CountingUpstream } from '../support/counting-upstream';
import { postJson } from '../support/http';

const HOST_DELAY_MS = 150;

let upstream: CountingUpstream;
let marking: InProcessServer;
let unmarked: InProcessServer;

beforeAll(async () => {
	upstream = await startCountingUpstream(HOST_DELAY_MS);
	const { args, env } = upstream.serverOptions();
	[marking, unmarked] = await Promise.all([
		startInProcessServer({ args: [...args, '--log-level', 'silent'], env }),
		startInProcessServer({ args: [...args, '--log-level', 'silent', '--provenance', 'off'], env }),
	]);
}, 60_000);

afterAll(async () => {
	await Promise.all([marking, unmarked].map((server) => server?.stop({ removeData: true })));
	await upstream?.close();
});

/** The header's metrics by name (W3C Server Timing: `name;dur=ms`, comma-separated), each parsed strictly. */
function serverTiming(header: string | null): Map<string, number> {
	expect(header).not.toBeNull();
	const metrics = new Map<string, number>();
	for (const entry of header!.split(',')) {
		const match = /^\s*([A-Za-z0-9_.-]+);dur=(\d+(?:\.\d+)?)\s*$/.exec(entry);
		expect(match).not.toBeNull();
		metrics.set(match![1]!, Number(match![2]));
	}
	return metrics;
}

const generate = (server: InProcessServer, headers: Record<string, string> = {}) =>
	postJson(server, '/v1/images/generations', { model: 'p-image', prompt: 'A lighthouse', response_format: 'b64_json' }, { headers });

test('host, mark and total: the host at least its delay, the total at least both', async () => {
	const answer = await generate(marking);
	expect(answer.status).toBe(200);
	const timing = serverTiming(answer.headers.get('server-timing'));
	expect([...timing.keys()]).toEqual(['host', 'mark', 'total']);
	expect(timing.get('host')!).toBeGreaterThanOrEqual(HOST_DELAY_MS);
	expect(timing.get('mark')!).toBeGreaterThan(0);
	expect(timing.get('total')!).toBeGreaterThanOrEqual(timing.get('host')! + timing.get('mark')!);
});

test('with --provenance off nothing is marked: no mark metric', async () => {
	const answer = await generate(unmarked);
	expect(answer.status).toBe(200);
	const timing = serverTiming(answer.headers.get('server-timing'));
	expect([...timing.keys()]).toEqual(['host', 'total']);
	expect(timing.get('host')!).toBeGreaterThanOrEqual(HOST_DELAY_MS);
	expect(timing.get('total')!).toBeGreaterThanOrEqual(timing.get('host')!);
});

test('a replay of an Idempotency-Key generated nothing now: no Server-Timing', async () => {
	const headers = { 'idempotency-key': 'server-timing-replay-1' };
	const first = await generate(marking, headers);
	expect(first.status).toBe(200);
	expect(first.headers.get('server-timing')).not.toBeNull();
	const replay = await generate(marking, headers);
	expect(replay.status).toBe(200);
	expect(replay.headers.get('idempotent-replayed')).toBe('true');
	expect(replay.headers.get('server-timing')).toBeNull();
});
