// A loopback stand-in of Pruna's P-API for p-video, in a process of its own so that its memory and
// CPU are not the bench's: the routes, fields and statuses the API publishes (docs.api.pruna.ai,
// Models API; the p-video model page), as the test suites' stand-in
// (test/server/support/pruna-video-host.ts) has them. POST /v1/predictions (headers `apikey`,
// `Model: p-video`; body `{ input }`, 422 naming a field p-video refuses) answers `{ id, get_url }`;
// GET /v1/predictions/status/{id} answers `processing` until the prediction's time has passed,
// then `succeeded` with `generation_url`; the delivery streams the MP4 from disk with its length
// and asks for the key, as every route does (401 without it).
//
// `node pruna-video-host.mjs <mp4> [processing ms]`, the key in PRUNA_KEY. Not Pruna's: POST
// /bench/delivery with `{ "mp4": "<path>" }` changes the file later predictions deliver (the memory
// bench's small and large videos from one host).
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import http from 'node:http';

const PRUNA_KEY = process.env.PRUNA_KEY;
let mp4 = process.argv[2];
const processingMs = Number(process.argv[3] ?? 0);
const predictions = new Map();
let nextId = 1;

const ASPECT_RATIOS = ['16:9', '9:16', '4:3', '3:4', '3:2', '2:3', '1:1'];
const CHECKS = [
	['prompt', (value) => typeof value === 'string' && value.length > 0, 'a non-empty string'],
	['duration', (value) => value === undefined || (Number.isInteger(value) && value >= 1 && value <= 20), 'an integer from 1 to 20'],
	['resolution', (value) => value === undefined || value === '720p' || value === '1080p', "'720p' or '1080p'"],
	['fps', (value) => value === undefined || value === 24 || value === 48, '24 or 48'],
	['aspect_ratio', (value) => value === undefined || ASPECT_RATIOS.includes(value), `one of ${ASPECT_RATIOS.join(', ')}`],
	['seed', (value) => value === undefined || Number.isInteger(value), 'an integer'],
	...['draft', 'prompt_upsampling', 'save_audio'].map((field) => [field, (value) => value === undefined || typeof value === 'boolean', 'a boolean']),
	...['image', 'last_frame_image', 'audio'].map((field) => [field, (value) => value === undefined || (typeof value === 'string' && /^(https?:|data:)/.test(value)), 'a URL']),
];

/** The first field of `input` that p-video's schema refuses, with the reason; undefined when it takes it. */
function invalidInput(input) {
	if (!input || typeof input !== 'object') return 'input: field required';
	const unknown = Object.keys(input).find((field) => !CHECKS.some(([known]) => known === field));
	if (unknown) return `input.${unknown}: extra fields not permitted`;
	const failed = CHECKS.find(([field, ok]) => !ok(input[field]));
	return failed ? `input.${failed[0]} must be ${failed[2]}` : undefined;
}

const sendJson = (response, status, body) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));

async function sendMp4(response, path) {
	const { size } = await stat(path);
	response.writeHead(200, { 'content-type': 'video/mp4', 'content-length': String(size) });
	createReadStream(path).pipe(response);
}

function route(request, response, body, origin) {
	const path = new URL(request.url, origin).pathname;
	if (request.method === 'POST' && path === '/bench/delivery') {
		mp4 = JSON.parse(body).mp4;
		return sendJson(response, 200, { mp4 });
	}
	if (request.headers.apikey !== PRUNA_KEY) return sendJson(response, 401, { error: { code: 'UNAUTHORIZED', message: 'Invalid or missing API key' } });
	if (request.method === 'POST' && path === '/v1/predictions') {
		if (request.headers.model !== 'p-video') return sendJson(response, 404, { error: { code: 'MODEL_NOT_FOUND', message: `Model '${String(request.headers.model)}' not found` } });
		const input = JSON.parse(body || '{}').input;
		const invalid = invalidInput(input);
		if (invalid) return sendJson(response, 422, { error: { code: 'VALIDATION_ERROR', message: invalid } });
		const id = `pv${nextId++}`;
		predictions.set(id, { readyAt: Date.now() + processingMs, mp4 });
		return sendJson(response, 200, { id, model: 'p-video', input, get_url: `${origin}/v1/predictions/status/${id}` });
	}
	const status = /^\/v1\/predictions\/status\/([\w-]+)$/.exec(path);
	if (request.method === 'GET' && status) {
		const prediction = predictions.get(status[1]);
		if (!prediction) return sendJson(response, 404, { error: { code: 'NOT_FOUND', message: 'Prediction not found' } });
		if (Date.now() < prediction.readyAt) return sendJson(response, 200, { id: status[1], status: 'processing', message: 'Generating video' });
		return sendJson(response, 200, { id: status[1], status: 'succeeded', generation_url: `${origin}/v1/predictions/delivery/xy/${status[1]}/output.mp4` });
	}
	const delivery = /^\/v1\/predictions\/delivery\/xy\/([\w-]+)\/output\.mp4$/.exec(path);
	if (request.method === 'GET' && delivery && predictions.has(delivery[1])) return void sendMp4(response, predictions.get(delivery[1]).mp4);
	sendJson(response, 404, { error: { code: 'NOT_FOUND', message: `No route for ${request.method} ${path}` } });
}

const server = http.createServer((request, response) => {
	let body = '';
	request.setEncoding('utf8');
	request.on('data', (chunk) => (body += chunk));
	request.on('end', () => route(request, response, body, `http://127.0.0.1:${server.address().port}`));
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
