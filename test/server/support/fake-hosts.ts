/**
 * Loopback stand-ins for the model hosts, answering with the request and response shapes their
 * public documentation gives (see the provider files in server/src/generation/providers/):
 * Replicate's predictions and files APIs, Pruna's P-API and Ideogram's generate endpoint. Every request is
 * recorded; any route can be made to fail, rate-limit or hang for the next calls.
 * A prediction finishes after a number of polls (`setPendingPolls`) or after some time
 * (`setPredictionMs`). A create waits for one that takes time as the hosts do: Replicate's for
 * at most the `Prefer: wait=N` seconds asked (its sync mode), Pruna's for at most 60 s with
 * `Try-Sync: true`; one counted in polls answers at once, since no wait advances it.
 * Replicate's predictions name `urls.get` and `urls.cancel`, and both hosts' status routes answer
 * 404 for an id they never made.
 */
import type http from 'node:http';
import { scriptedAnswers, startRecordingServer, type RecordedCall } from './recording-server';

export type { RecordedCall } from './recording-server';

export interface Scripted {
	status: number;
	body?: unknown;
	headers?: Record<string, string>;
	/** Never answer (the connection stays open until the client gives up). */
	hang?: boolean;
	/** Make the prediction first, then answer this (a proxy's 502 after the host took the create). */
	afterMaking?: boolean;
}

export interface FakeHosts {
	origin: string;
	calls: RecordedCall[];
	/** The image every host hands out. */
	setImage(bytes: Buffer): void;
	/** The next `count` requests whose path starts with `pathPrefix` get `answer`. */
	script(method: string, pathPrefix: string, answer: Scripted, count?: number): void;
	/** Predictions answer "processing" this many times before they succeed (0: finished at once). */
	setPendingPolls(count: number): void;
	/** Predictions made from now on take this long before they succeed (0: no time at all). */
	setPredictionMs(ms: number): void;
	/** The ids of the predictions made (Replicate's `r…`, Pruna's `p…`), in order, whatever the create was answered. */
	predictionsMade(): string[];
	callsTo(method: string, pathPrefix: string): RecordedCall[];
	reset(): void;
	close(): Promise<void>;
}

export async function startFakeHosts(): Promise<FakeHosts> {
	let image: Buffer = Buffer.alloc(0);
	let pendingPolls = 0;
	let predictionMs = 0;
	const scripts = scriptedAnswers<Scripted>();
	const polls = new Map<string, number>();
	/** When each prediction that takes time is ready (Date.now()). */
	const readyAt = new Map<string, number>();
	const made: string[] = [];
	const holds = new Set<NodeJS.Timeout>();
	let nextId = 1;
	/** Replicate's files are numbered from 1 after each reset: `rf1`, `rf2`, … in the order they arrive. */
	let nextReplicateFile = 1;

	const recorder = await startRecordingServer((call, response) => {
		const answer = scripts.take(call);
		if (!answer) return route(call, response);
		if (answer.afterMaking) makePrediction(String(call.headers.authorization ?? '').startsWith('Bearer ') ? 'r' : 'p');
		if (!answer.hang) sendJson(response, answer.status, answer.body ?? {}, answer.headers);
	});
	const { origin, calls } = recorder;

	const sendJson = (response: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void => {
		response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
	};

	const prediction = (id: string, status: string) => ({
		id,
		status,
		output: status === 'succeeded' ? [`${origin}/out/${id}.png`] : null,
		error: null,
		urls: { get: `${origin}/v1/predictions/${id}`, cancel: `${origin}/v1/predictions/${id}/cancel` },
	});

	function makePrediction(prefix: 'r' | 'p'): string {
		const id = `${prefix}${nextId++}`;
		polls.set(id, pendingPolls);
		if (predictionMs > 0) readyAt.set(id, Date.now() + predictionMs);
		made.push(id);
		return id;
	}

	/** Whether a prediction still takes time (it is not done by counting polls). */
	const stillRunning = (id: string) => (readyAt.get(id) ?? 0) > Date.now() && (polls.get(id) ?? 0) >= 0;

	/** A create that waits for its prediction: until it is ready, at most `maxMs`, or the client leaves. */
	function holdCreate(id: string, maxMs: number, response: http.ServerResponse, answer: () => void): void {
		const untilReady = (readyAt.get(id) ?? 0) - Date.now();
		const ms = Math.min(untilReady, maxMs);
		if (ms <= 0 || (polls.get(id) ?? 0) > 0) return answer();
		const timer = setTimeout(() => {
			holds.delete(timer);
			// A timer may fire a millisecond before Date.now() reaches the moment it waited for.
			if (untilReady <= maxMs) readyAt.set(id, Math.min(readyAt.get(id) ?? 0, Date.now()));
			if (!response.destroyed) answer();
		}, ms);
		holds.add(timer);
	}

	function route(call: RecordedCall, response: http.ServerResponse): void {
		const { method, path } = call;
		if (method === 'GET' && path.startsWith('/out/')) return void response.writeHead(200, { 'content-type': 'image/png' }).end(image);
		// An output that arrives a few bytes at a time and never completes: a download slower than any limit.
		if (method === 'GET' && path.startsWith('/drip/')) {
			response.writeHead(200, { 'content-type': 'image/png', 'content-length': String(image.length) });
			let sent = 0;
			const timer = setInterval(() => {
				if (sent < image.length - 1) response.write(image.subarray(sent, ++sent));
			}, 100);
			response.on('close', () => clearInterval(timer));
			return;
		}

		// Replicate (its calls carry `Authorization: Bearer`, Pruna's an `apikey` header: both have /v1/files and /v1/predictions)
		const toReplicate = String(call.headers.authorization ?? '').startsWith('Bearer ');
		const createPrediction = () => {
			const id = makePrediction('r');
			// Sync mode: `Prefer: wait=N` holds the answer until the prediction ends or N seconds pass.
			const wait = /^wait(?:=(\d+))?$/.exec(String(call.headers.prefer ?? '').trim());
			const waitMs = wait ? Number(wait[1] ?? 60) * 1000 : 0;
			holdCreate(id, waitMs, response, () => sendJson(response, 201, prediction(id, pendingPolls > 0 ? 'starting' : stillRunning(id) ? 'processing' : 'succeeded')));
		};
		if (method === 'POST' && /^\/v1\/models\/[^/]+\/[^/]+\/predictions$/.test(path)) return createPrediction();
		// Any model by `version` ("owner/name:version_id", "owner/name" or the bare version id).
		if (toReplicate && method === 'POST' && path === '/v1/predictions') {
			if (typeof call.json?.version !== 'string' || !call.json.version) {
				return sendJson(response, 422, { title: 'Invalid version or not permitted', detail: 'The specified version does not exist (or perhaps you do not have permission to use it?)', status: 422 });
			}
			return createPrediction();
		}
		// The files API: multipart with the file in part `content`; the file object names its URL in `urls.get`.
		if (toReplicate && method === 'POST' && path === '/v1/files') {
			if (!call.body.includes('name="content"')) return sendJson(response, 400, { title: 'Bad Request', detail: 'Missing content', status: 400 });
			const id = `rf${nextReplicateFile++}`;
			const now = new Date();
			return sendJson(response, 201, {
				id,
				name: /filename="([^"]*)"/.exec(call.body.toString('latin1'))?.[1] ?? 'file',
				content_type: /name="content"[^\r]*\r\ncontent-type: ([^\r]+)/i.exec(call.body.toString('latin1'))?.[1] ?? 'application/octet-stream',
				size: call.body.length,
				etag: `"${id}"`,
				checksums: {},
				metadata: {},
				created_at: now.toISOString(),
				expires_at: new Date(now.getTime() + 24 * 3600_000).toISOString(),
				urls: { get: `${origin}/v1/files/${id}` },
			});
		}
		const notFound = () => sendJson(response, 404, { detail: 'Not found.' });
		const replicateGet = /^\/v1\/predictions\/(r\d+)$/.exec(path);
		if (method === 'GET' && replicateGet) {
			const id = replicateGet[1]!;
			if (!polls.has(id)) return notFound();
			const left = polls.get(id)!;
			if (left < 0) return sendJson(response, 200, prediction(id, 'canceled'));
			if (stillRunning(id)) return sendJson(response, 200, prediction(id, 'processing'));
			polls.set(id, Math.max(0, left - 1));
			return sendJson(response, 200, prediction(id, left > 1 ? 'processing' : 'succeeded'));
		}
		const replicateCancel = /^\/v1\/predictions\/(r\d+)\/cancel$/.exec(path);
		if (method === 'POST' && replicateCancel) {
			if (!polls.has(replicateCancel[1]!)) return notFound();
			polls.set(replicateCancel[1]!, -1);
			return sendJson(response, 200, prediction(replicateCancel[1]!, 'canceled'));
		}

		// Pruna
		if (method === 'POST' && path === '/v1/files') {
			const id = `f${nextId++}`;
			return sendJson(response, 200, { id, filename: 'input.png', content_type: 'image/png', size: call.body.length, urls: { get: `https://files.pruna.example/${id}` } });
		}
		if (method === 'POST' && path === '/v1/predictions') {
			const id = makePrediction('p');
			const accepted = () => sendJson(response, 200, { id, model: call.headers.model, input: call.json?.input, get_url: `${origin}/v1/predictions/status/${id}` });
			if (pendingPolls > 0 || call.headers['try-sync'] !== 'true') return accepted();
			// Try-Sync: the final result if the prediction ends within 60 s, else the asynchronous answer.
			return holdCreate(id, 60_000, response, () =>
				stillRunning(id) ? accepted() : sendJson(response, 200, { status: 'succeeded', generation_url: `${origin}/v1/predictions/delivery/xy/${id}/output.png` }),
			);
		}
		const prunaStatus = /^\/v1\/predictions\/status\/(p\d+)$/.exec(path);
		if (method === 'GET' && prunaStatus) {
			const id = prunaStatus[1]!;
			if (!polls.has(id)) return sendJson(response, 404, { error: { code: 'NOT_FOUND', message: 'Prediction not found' } });
			if (stillRunning(id)) return sendJson(response, 200, { status: 'processing', message: 'Generation in progress' });
			const left = polls.get(id)! - 1;
			polls.set(id, left);
			return sendJson(response, 200, left > 0 ? { status: 'processing', message: 'Generation in progress' } : { status: 'succeeded', generation_url: `${origin}/v1/predictions/delivery/xy/${id}/output.png` });
		}
		if (method === 'GET' && path.startsWith('/v1/predictions/delivery/')) {
			if (!call.headers.apikey) return sendJson(response, 401, { error: { code: 'UNAUTHORIZED', message: 'Missing apikey header' } });
			return void response.writeHead(200, { 'content-type': 'image/png' }).end(image);
		}

		// Ideogram
		if (method === 'POST' && path === '/generate') {
			return sendJson(response, 200, {
				created: new Date().toISOString(),
				data: [{ url: `${origin}/out/ideogram.png`, prompt: call.json?.image_request?.prompt, resolution: '1024x1024', is_image_safe: true, seed: 12345 }],
			});
		}
		sendJson(response, 404, { detail: `No route for ${method} ${path}` });
	}

	return {
		origin,
		calls,
		setImage: (bytes) => (image = bytes),
		script: scripts.add,
		setPendingPolls: (count) => (pendingPolls = count),
		setPredictionMs: (ms) => (predictionMs = ms),
		predictionsMade: () => [...made],
		callsTo: recorder.callsTo,
		reset() {
			calls.length = 0;
			scripts.clear();
			made.length = 0;
			pendingPolls = 0;
			predictionMs = 0;
			nextReplicateFile = 1;
		},
		close() {
			for (const timer of holds) clearTimeout(timer);
			return recorder.close();
		},
	};
}

/** Replicate and Pruna pointed at the stand-ins at `origin`, with the keys the tests send. */
export const fakeHostsEnv = (origin: string): NodeJS.ProcessEnv => ({
	REPLICATE_API_TOKEN: 'r8_token',
	REPLICATE_BASE_URL: `${origin}/v1`,
	PRUNA_API_KEY: 'pruna-key',
	PRUNA_BASE_URL: `${origin}/v1`,
});

/** Creates a prediction at the stand-in as an earlier run of the service did; answers its id. */
export async function createPredictionAt(origin: string, host: 'replicate' | 'pruna'): Promise<string> {
	const response =
		host === 'replicate'
			? await fetch(`${origin}/v1/models/prunaai/p-image/predictions`, { method: 'POST', headers: { authorization: 'Bearer r8_token', 'content-type': 'application/json' }, body: '{"input":{}}' })
			: await fetch(`${origin}/v1/predictions`, { method: 'POST', headers: { apikey: 'pruna-key', model: 'p-image', 'content-type': 'application/json' }, body: '{"input":{}}' });
	const { id } = (await response.json()) as { id: string };
	return id;
}
