/**
 * A loopback stand-in of Pruna's P-API for p-video, with the routes, fields and statuses it
 * publishes (docs.api.pruna.ai, Models API; the p-video model page): POST /v1/files (multipart part
 * `content`, answered with `urls.get`), POST /v1/predictions (headers `apikey`, `Model`; body
 * `{ input }` checked against p-video's input schema, 422 naming the field), GET
 * /v1/predictions/status/{id} (`starting`, then `processing` for the polls set, then `succeeded`
 * with `generation_url`, or `failed` with `error`; 404 for an id it never made) and the delivery
 * of the MP4, which asks for the key. Every route but the delivery's CDN answers 401 without the
 * key. A delivery may be set on another origin (a CDN that asks for no key).
 */
import type http from 'node:http';
import { scriptedAnswers, startRecordingServer, type RecordedCall } from './recording-server';
import { contentPart, sendJson, sendScripted, sendMp4, startVideoCdn, type VideoHostScript } from './video-hosts';

export interface PrunaVideoHost {
	origin: string;
	/** The delivery host on another origin (used after `deliverElsewhere(true)`). */
	cdn: { origin: string; calls: RecordedCall[] };
	calls: RecordedCall[];
	callsTo(method: string, pathPrefix: string): RecordedCall[];
	/** The next `count` calls whose path starts with `pathPrefix` get `answer`. */
	script(method: string, pathPrefix: string, answer: VideoHostScript, count?: number): void;
	/** Polls that answer `starting`/`processing` before the prediction ends (at least 1). */
	setPendingPolls(count: number): void;
	/** How predictions made from now on end. */
	setOutcome(outcome: 'succeeded' | 'failed' | 'canceled'): void;
	deliverElsewhere(elsewhere: boolean): void;
	/** The files uploaded, in order: name, type and bytes. */
	uploads(): Array<{ filename: string; type: string; bytes: Buffer; url: string }>;
	predictionsMade(): string[];
	close(): Promise<void>;
}

export const PRUNA_KEY = 'pruna-video-key';

const ASPECT_RATIOS = ['16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '1:1'];

/** The first field of `input` that p-video's schema refuses, with the reason; undefined when it takes it. */
function invalidInput(input: Record<string, unknown> | undefined): string | undefined {
	if (!input || typeof input !== 'object') return 'input: field required';
	const checks: Array<[string, (value: unknown) => boolean, string]> = [
		['prompt', (value) => typeof value === 'string' && value.length > 0, 'a non-empty string'],
		['duration', (value) => value === undefined || (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 20), 'an integer from 1 to 20'],
		['resolution', (value) => value === undefined || value === '720p' || value === '1080p', "'720p' or '1080p'"],
		['fps', (value) => value === undefined || value === 24 || value === 48, '24 or 48'],
		['aspect_ratio', (value) => value === undefined || ASPECT_RATIOS.includes(value as string), `one of ${ASPECT_RATIOS.join(', ')}`],
		['seed', (value) => value === undefined || Number.isInteger(value), 'an integer'],
		...['draft', 'prompt_upsampling', 'save_audio'].map((field): [string, (value: unknown) => boolean, string] => [field, (value) => value === undefined || typeof value === 'boolean', 'a boolean']),
		...['image', 'last_frame_image', 'audio'].map((field): [string, (value: unknown) => boolean, string] => [field, (value) => value === undefined || (typeof value === 'string' && /^(https?:|data:)/.test(value)), 'a URL']),
	];
	const known = new Set(checks.map(([field]) => field));
	const unknown = Object.keys(input).find((field) => !known.has(field));
	if (unknown) return `input.${unknown}: extra fields not permitted`;
	const failed = checks.find(([field, ok]) => !ok(input[field]));
	return failed ? `input.${failed[0]} must be ${failed[2]}` : undefined;
}

export async function startPrunaVideoHost(mp4: string): Promise<PrunaVideoHost> {
	const cdn = await startVideoCdn(mp4);
	const scripts = scriptedAnswers<VideoHostScript>();
	const predictions = new Map<string, { left: number; outcome: 'succeeded' | 'failed' | 'canceled' }>();
	const made: string[] = [];
	const uploads: Array<{ filename: string; type: string; bytes: Buffer; url: string }> = [];
	let pendingPolls = 1;
	let outcome: 'succeeded' | 'failed' | 'canceled' = 'succeeded';
	let elsewhere = false;
	let nextId = 1;

	const makePrediction = (): string => {
		const id = `pv${nextId++}`;
		predictions.set(id, { left: pendingPolls, outcome });
		made.push(id);
		return id;
	};

	const recorder = await startRecordingServer((call, response) => {
		if (call.headers.apikey !== PRUNA_KEY) return sendJson(response, 401, { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key' } });
		const answer = scripts.take(call);
		if (!answer) return route(call, response);
		if (answer.afterMaking) makePrediction();
		sendScripted(response, answer);
	});
	const { origin } = recorder;

	function route(call: RecordedCall, response: http.ServerResponse): void {
		const { method, path } = call;
		if (method === 'POST' && path === '/v1/files') {
			const part = contentPart(call);
			if (!part) return sendJson(response, 422, { error: { code: 'VALIDATION_ERROR', message: 'content: field required' } });
			const id = `file${nextId++}`;
			const url = `${origin}/v1/files/${id}`;
			uploads.push({ ...part, url });
			return sendJson(response, 200, { id, filename: part.filename, content_type: part.type, size: part.bytes.length, urls: { get: url } });
		}
		if (method === 'POST' && path === '/v1/predictions') {
			if (call.headers.model !== 'p-video') return sendJson(response, 404, { error: { code: 'MODEL_NOT_FOUND', message: `Model '${String(call.headers.model)}' not found` } });
			const invalid = invalidInput(call.json?.input);
			if (invalid) return sendJson(response, 422, { error: { code: 'VALIDATION_ERROR', message: invalid } });
			const id = makePrediction();
			return sendJson(response, 200, { id, model: 'p-video', input: call.json.input, get_url: `${origin}/v1/predictions/status/${id}` });
		}
		const status = /^\/v1\/predictions\/status\/([\w-]+)$/.exec(path);
		if (method === 'GET' && status) {
			const prediction = predictions.get(status[1]!);
			if (!prediction) return sendJson(response, 404, { error: { code: 'NOT_FOUND', message: 'Prediction not found' } });
			prediction.left--;
			if (prediction.left >= 0) return sendJson(response, 200, { id: status[1], status: prediction.left === pendingPolls - 1 ? 'starting' : 'processing', message: 'Generating video' });
			if (prediction.outcome === 'failed') return sendJson(response, 200, { id: status[1], status: 'failed', error: 'The prompt was flagged by the safety filter' });
			if (prediction.outcome === 'canceled') return sendJson(response, 200, { id: status[1], status: 'canceled' });
			const delivery = elsewhere ? `${cdn.origin}/deliveries/${status[1]}/output.mp4` : `${origin}/v1/predictions/delivery/xy/${status[1]}/output.mp4`;
			return sendJson(response, 200, { id: status[1], status: 'succeeded', generation_url: delivery });
		}
		if (method === 'GET' && path.startsWith('/v1/predictions/delivery/')) return void sendMp4(response, mp4);
		sendJson(response, 404, { error: { code: 'NOT_FOUND', message: `No route for ${method} ${path}` } });
	}

	return {
		origin,
		cdn,
		calls: recorder.calls,
		callsTo: recorder.callsTo,
		script: scripts.add,
		setPendingPolls: (count) => (pendingPolls = Math.max(1, count)),
		setOutcome: (next) => (outcome = next),
		deliverElsewhere: (next) => (elsewhere = next),
		uploads: () => [...uploads],
		predictionsMade: () => [...made],
		close: async () => {
			await Promise.all([recorder.close(), cdn.close()]);
		},
	};
}
