/**
 * A loopback stand-in of Replicate's HTTP API for prunaai/p-video, with the routes, fields,
 * statuses and errors Replicate publishes: POST /v1/models/prunaai/p-video/predictions (201 and
 * the prediction; `{ input }` checked against the model's input schema, 422 "Input validation
 * failed" naming the field; `Prefer: wait=N` is read, but a prediction counted in polls is
 * advanced by nothing else, so the create answers at once), GET /v1/predictions/{id} (`starting`, `processing` for the polls set,
 * then `succeeded` with `output` the MP4's URL on the delivery host, or `failed` with `error`, or
 * `aborted` from `starting`: its `Cancel-After` deadline passed before it started),
 * POST /v1/predictions/{id}/cancel (then `canceled`), POST /v1/files (multipart part `content`,
 * answered with `urls.get`); 401 without the bearer token, 404 for an id it never made.
 */
import type http from 'node:http';
import { scriptedAnswers, startRecordingServer, type RecordedCall } from './recording-server';
import { contentPart, sendJson, sendScripted, startVideoCdn, type VideoHostScript } from './video-hosts';

export interface ReplicateVideoHost {
	origin: string;
	/** The delivery host (replicate.delivery's part), another origin. */
	cdn: { origin: string; calls: RecordedCall[] };
	calls: RecordedCall[];
	callsTo(method: string, pathPrefix: string): RecordedCall[];
	script(method: string, pathPrefix: string, answer: VideoHostScript, count?: number): void;
	/** Polls that answer `starting`/`processing` before a prediction ends (at least 1). */
	setPendingPolls(count: number): void;
	/** How predictions made from now on end (`aborted`: never started before their deadline). */
	setOutcome(outcome: Outcome): void;
	/** The status of a prediction it made. */
	statusOf(id: string): string | undefined;
	uploads(): Array<{ filename: string; type: string; bytes: Buffer; url: string }>;
	predictionsMade(): string[];
	close(): Promise<void>;
}

type Outcome = 'succeeded' | 'failed' | 'aborted';

export const REPLICATE_TOKEN = 'r8_video_token';

const ASPECT_RATIOS = ['16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '1:1'];

/** prunaai/p-video's input schema, as its first refusal in Replicate's words; undefined when it takes the input. */
function invalidField(input: Record<string, unknown> | undefined): { field: string; description: string } | undefined {
	if (!input || typeof input !== 'object') return { field: 'input', description: 'input is required' };
	const checks: Array<[string, (value: unknown) => boolean, string]> = [
		['prompt', (value) => typeof value === 'string', 'prompt is required'],
		['duration', (value) => value === undefined || (Number.isInteger(value) && (value as number) >= 1 && (value as number) <= 10), 'Must be between 1 and 10'],
		['resolution', (value) => value === undefined || value === '720p' || value === '1080p', 'resolution must be one of the following: "720p", "1080p"'],
		['fps', (value) => value === undefined || value === 24 || value === 48, 'fps must be one of the following: 24, 48'],
		['aspect_ratio', (value) => value === undefined || ASPECT_RATIOS.includes(value as string), `aspect_ratio must be one of the following: ${ASPECT_RATIOS.map((ratio) => `"${ratio}"`).join(', ')}`],
		['seed', (value) => value === undefined || Number.isInteger(value), 'Invalid type. Expected: integer'],
		...['draft', 'prompt_upsampling', 'save_audio'].map((field): [string, (value: unknown) => boolean, string] => [field, (value) => value === undefined || typeof value === 'boolean', 'Invalid type. Expected: boolean']),
		...['image', 'last_frame_image', 'audio'].map((field): [string, (value: unknown) => boolean, string] => [field, (value) => value === undefined || (typeof value === 'string' && /^(https?:|data:)/.test(value)), 'Does not match format \'uri\'']),
	];
	const known = new Set(checks.map(([field]) => field));
	const unknown = Object.keys(input).find((field) => !known.has(field));
	if (unknown) return { field: `input.${unknown}`, description: 'Additional property is not allowed' };
	const failed = checks.find(([field, ok]) => !ok(input[field]));
	return failed ? { field: `input.${failed[0]}`, description: failed[2] } : undefined;
}

export async function startReplicateVideoHost(mp4: string): Promise<ReplicateVideoHost> {
	const cdn = await startVideoCdn(mp4);
	const scripts = scriptedAnswers<VideoHostScript>();
	const predictions = new Map<string, { left: number; status: string; outcome: Outcome; input: unknown; createdAt: string }>();
	const made: string[] = [];
	const uploads: Array<{ filename: string; type: string; bytes: Buffer; url: string }> = [];
	let pendingPolls = 1;
	let outcome: Outcome = 'succeeded';
	let nextId = 1;

	const recorder = await startRecordingServer((call, response) => {
		if (call.headers.authorization !== `Bearer ${REPLICATE_TOKEN}`) {
			return sendJson(response, 401, { title: 'Unauthenticated', detail: 'You did not pass a valid authentication token', status: 401 });
		}
		const answer = scripts.take(call);
		if (!answer) return route(call, response);
		if (answer.afterMaking) makePrediction(call.json?.input);
		sendScripted(response, answer);
	});
	const { origin } = recorder;

	function makePrediction(input: unknown): string {
		const id = `rv${String(nextId++).padStart(4, '0')}`;
		predictions.set(id, { left: pendingPolls, status: 'starting', outcome, input, createdAt: new Date().toISOString() });
		made.push(id);
		return id;
	}

	function prediction(id: string) {
		const state = predictions.get(id)!;
		return {
			id,
			model: 'prunaai/p-video',
			version: 'hidden',
			input: state.input,
			logs: state.status === 'starting' ? '' : 'Generating frames...',
			output: state.status === 'succeeded' ? `${cdn.origin}/xezq/${id}/output.mp4` : null,
			data_removed: false,
			error: state.status === 'failed' ? 'CUDA out of memory' : null,
			status: state.status,
			created_at: state.createdAt,
			urls: { cancel: `${origin}/v1/predictions/${id}/cancel`, get: `${origin}/v1/predictions/${id}`, web: `https://replicate.com/p/${id}` },
		};
	}

	function route(call: RecordedCall, response: http.ServerResponse): void {
		const { method, path } = call;
		if (method === 'POST' && path === '/v1/models/prunaai/p-video/predictions') {
			const invalid = invalidField(call.json?.input);
			if (invalid) return sendJson(response, 422, { title: 'Input validation failed', detail: `- ${invalid.field}: ${invalid.description}`, status: 422, invalid_fields: [{ type: 'invalid', ...invalid }] });
			// A prediction counted in polls is advanced by nothing else: the create does not hold it.
			return sendJson(response, 201, prediction(makePrediction(call.json.input)));
		}
		if (method === 'POST' && path === '/v1/files') {
			const part = contentPart(call);
			if (!part) return sendJson(response, 400, { title: 'Bad Request', detail: 'Missing content', status: 400 });
			const id = `file${uploads.length + 1}`;
			const url = `${origin}/v1/files/${id}`;
			uploads.push({ ...part, url });
			return sendJson(response, 201, { id, name: part.filename, content_type: part.type, size: part.bytes.length, urls: { get: url } });
		}
		const get = /^\/v1\/predictions\/(\w+)$/.exec(path);
		const cancel = /^\/v1\/predictions\/(\w+)\/cancel$/.exec(path);
		const id = (get ?? cancel)?.[1];
		if (!id || !predictions.has(id)) return sendJson(response, 404, { title: 'Not found', detail: 'Not found.', status: 404 });
		const state = predictions.get(id)!;
		if (method === 'POST' && cancel) {
			if (state.status === 'starting' || state.status === 'processing') state.status = 'canceled';
			return sendJson(response, 200, prediction(id));
		}
		if (method === 'GET' && get && (state.status === 'starting' || state.status === 'processing')) {
			state.left--;
			// An aborted prediction never ran: it stays `starting` until Replicate aborts it.
			state.status = state.left > 0 ? (state.outcome === 'aborted' ? 'starting' : 'processing') : state.outcome;
		}
		sendJson(response, 200, prediction(id));
	}

	return {
		origin,
		cdn,
		calls: recorder.calls,
		callsTo: recorder.callsTo,
		script: scripts.add,
		setPendingPolls: (count) => (pendingPolls = Math.max(1, count)),
		setOutcome: (next) => (outcome = next),
		statusOf: (id) => predictions.get(id)?.status,
		uploads: () => [...uploads],
		predictionsMade: () => [...made],
		close: async () => {
			await Promise.all([recorder.close(), cdn.close()]);
		},
	};
}
