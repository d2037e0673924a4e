/**
 * Loopback stand-ins for the synchronous image APIs people run or rent themselves, each following
 * its published API:
 * - OpenAI's images API (`POST /v1/images/generations`, multipart `POST /v1/images/edits`): refuses
 *   an unknown field as OpenAI does (400 `unknown_parameter` naming it), refuses `response_format`
 *   for gpt-image models and a size the model does not take, answers `b64_json` (gpt-image, or when
 *   asked) or a `url` it serves itself (dall-e's default); an edit's image that is not PNG, JPEG or
 *   WebP, and a prompt over the model's length, are refused as OpenAI does. `gateway` makes it a
 *   gateway in front of OpenAI (LiteLLM, OpenRouter): a model named `openai/gpt-image-1` is OpenAI's
 *   `gpt-image-1`.
 * - LocalAI (mudler/LocalAI, core/http/routes/openai.go and core/http/endpoints/openai/image.go):
 *   only `/v1/images/generations` (no `/images/edits`: 404 from its error handler, render.go),
 *   JSON whose unknown fields are ignored as Go's decoder does; the prompt split at `|` into the
 *   positive and the negative prompt; `seed` used; `size` WxH (512x512 when it has no `x`); the
 *   input image of an img2img as base64 (or a URL) in `file`, dropped when it does not decode;
 *   `b64_json` when asked, else a URL under `/generated-images/`. What it understood of each request
 *   is recorded in `drawings`.
 * - Stable Diffusion WebUI's API: in a1111-host.ts (one drawing at a time behind its queue lock).
 * Every request is recorded; `next` replaces the next answer (an error, an HTML page, an empty
 * list, bytes that are no image); `drawMs` makes each drawing take that long.
 */
import { startRecordingServer, type RecordedCall } from './recording-server';

export interface ImageApiCall extends RecordedCall {
	/** A multipart body's fields: text values, and files as `{ type, size }`. */
	form?: Array<[string, string | { type: string; size: number }]>;
}

/** What to answer instead of a drawn image: raw status and body, or one of the broken answers. */
export type NextAnswer = { status: number; body: unknown; headers?: Record<string, string> } | 'html' | 'empty' | 'not-image';

export interface ImageApiHost {
	origin: string;
	calls: ImageApiCall[];
	/** The image it draws. */
	image: Buffer;
	/** How long each drawing takes (ms). */
	drawMs: number;
	next(answer: NextAnswer): void;
	reset(): void;
	close(): Promise<void>;
}

type Route = (call: ImageApiCall, send: (status: number, body: unknown, headers?: Record<string, string>) => void, host: ImageApiHost) => void;

interface HostBehaviour {
	route: Route;
	/** The host's answer shape with an empty image list, or with bytes that are no image. */
	broken(kind: 'empty' | 'not-image'): unknown;
	/** Told of each drawing that takes time; `finish` answers it at once. Returns a forgetter. */
	onDrawStarted?(finish: () => void): () => void;
	/** Serves `GET <filesAt>…` (its image, no key needed), for answers that give a URL. */
	filesAt?: string;
}

async function startImageApiHost({ route, broken, onDrawStarted, filesAt }: HostBehaviour): Promise<ImageApiHost> {
	const scripted: NextAnswer[] = [];
	const withForm = async (call: ImageApiCall): Promise<ImageApiCall> => {
		const type = call.headers['content-type'] ?? '';
		if (!type.startsWith('multipart/form-data')) return call;
		const form = await new Request('http://stand-in', { method: 'POST', headers: { 'content-type': type }, body: call.body }).formData();
		return { ...call, form: [...form.entries()].map(([name, value]) => [name, typeof value === 'string' ? value : { type: value.type, size: value.size }]) };
	};
	const recorder = await startRecordingServer<ImageApiCall>((call, response) => {
		if (filesAt && call.method === 'GET' && call.path.startsWith(filesAt)) return void response.writeHead(200, { 'content-type': 'image/png' }).end(host.image);
		const send = (status: number, answer: unknown, headers: Record<string, string> = {}) => {
			if (!response.destroyed) response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(answer));
		};
		const isDraw = call.method === 'POST' && !call.path.endsWith('/interrupt');
		const answer = () => {
			const next = isDraw ? scripted.shift() : undefined;
			if (next === undefined) return route(call, send, host);
			if (next === 'html') return void response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body>Welcome</body></html>');
			if (next === 'empty' || next === 'not-image') return send(200, broken(next));
			send(next.status, next.body, next.headers);
		};
		if (!isDraw || host.drawMs <= 0) return answer();
		let done = false;
		const finish = () => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			stopListening?.();
			answer();
		};
		const timer = setTimeout(finish, host.drawMs);
		const stopListening = onDrawStarted?.(finish);
		// A client that left is answered no more: its drawing must not take the next call's scripted answer.
		response.on('close', () => {
			done = true;
			clearTimeout(timer);
			stopListening?.();
		});
	}, withForm);
	const host: ImageApiHost = {
		origin: recorder.origin,
		calls: recorder.calls,
		image: Buffer.alloc(0),
		drawMs: 0,
		next: (answer) => void scripted.push(answer),
		reset() {
			host.calls.length = 0;
			scripted.length = 0;
			host.drawMs = 0;
		},
		close: recorder.close,
	};
	return host;
}

const NOT_AN_IMAGE = Buffer.from('this is not an image').toString('base64');

/** Fields of OpenAI's "Create image" and "Create image edit" requests (its images reference). */
const GENERATION_FIELDS = ['model', 'prompt', 'n', 'size', 'quality', 'response_format', 'style', 'user', 'background', 'moderation', 'output_format', 'output_compression', 'partial_images', 'stream'];
const EDIT_FIELDS = ['model', 'prompt', 'n', 'size', 'quality', 'response_format', 'user', 'background', 'input_fidelity', 'mask', 'output_format', 'output_compression', 'partial_images', 'stream'];
/** Sizes by model: gpt-image's three (and auto), dall-e-3's, dall-e-2's. */
const SIZES: Record<string, string[]> = {
	'gpt-image-1': ['1024x1024', '1536x1024', '1024x1536', 'auto'],
	'dall-e-3': ['1024x1024', '1792x1024', '1024x1792'],
	'dall-e-2': ['256x256', '512x512', '1024x1024'],
};

/** Prompt lengths by model (OpenAI's images reference, "prompt"). */
const PROMPT_MAX: Record<string, number> = { 'gpt-image-1': 32_000, 'dall-e-3': 4_000, 'dall-e-2': 1_000 };
/** The input images an edit takes ("Create image edit": png, webp or jpg). */
const EDIT_TYPES = ['image/png', 'image/jpeg', 'image/webp'];

export interface OpenAiHostOptions {
	/** The key it takes (`Authorization: Bearer …`); none: it takes any request. */
	apiKey?: string;
	/** A gateway in front of OpenAI: `openai/gpt-image-1` (any `provider/` prefix) is `gpt-image-1`. */
	gateway?: boolean;
}

const invalid = (message: string, param: string | null, code: string) => ({ error: { message, type: 'invalid_request_error', param, code } });

export async function startOpenAiHost(options: OpenAiHostOptions = {}): Promise<ImageApiHost> {
	return await startImageApiHost({
		filesAt: '/files/',
		route: (call, send, host) => {
			if (options.apiKey && call.headers.authorization !== `Bearer ${options.apiKey}`) {
				return send(401, invalid('Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', null, 'invalid_api_key'));
			}
			const edit = call.method === 'POST' && call.path === '/v1/images/edits';
			if (!edit && !(call.method === 'POST' && call.path === '/v1/images/generations')) return send(404, invalid(`Invalid URL (${call.method} ${call.path})`, null, 'unknown_url'));
			const fields: Record<string, unknown> = edit ? Object.fromEntries((call.form ?? []).filter(([name]) => !name.startsWith('image'))) : (call.json ?? {});
			const known = edit ? EDIT_FIELDS : GENERATION_FIELDS;
			const unknown = Object.keys(fields).find((name) => !known.includes(name));
			if (unknown) return send(400, invalid(`Unknown parameter: '${unknown}'.`, unknown, 'unknown_parameter'));
			const named = String(fields.model ?? 'dall-e-2');
			const model = options.gateway ? named.slice(named.lastIndexOf('/') + 1) : named;
			const gptImage = model.startsWith('gpt-image');
			if (gptImage && fields.response_format !== undefined) return send(400, invalid("Unknown parameter: 'response_format'.", 'response_format', 'unknown_parameter'));
			if (typeof fields.prompt !== 'string' || !fields.prompt) return send(400, invalid("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter'));
			const promptMax = PROMPT_MAX[model.startsWith('gpt-image') ? 'gpt-image-1' : model];
			if (promptMax !== undefined && fields.prompt.length > promptMax) {
				return send(400, invalid(`Invalid 'prompt': string too long. Expected a string with maximum length ${promptMax}, but got a string with length ${fields.prompt.length} instead.`, 'prompt', 'string_above_max_length'));
			}
			const sizes = SIZES[model];
			if (sizes && fields.size !== undefined && !sizes.includes(String(fields.size))) {
				return send(400, invalid(`Invalid value: '${String(fields.size)}'. Supported values are: ${sizes.map((size) => `'${size}'`).join(', ')}.`, 'size', 'invalid_value'));
			}
			if (edit) {
				const imageField = gptImage ? 'image[]' : 'image';
				const images = (call.form ?? []).filter(([name]) => name === imageField);
				const stray = (call.form ?? []).find(([name]) => name.startsWith('image') && name !== imageField);
				if (stray) return send(400, invalid(`Unknown parameter: '${stray[0]}'.`, stray[0], 'unknown_parameter'));
				if (images.length === 0) return send(400, invalid("Missing required parameter: 'image'.", 'image', 'missing_required_parameter'));
				const unsupported = images.map(([, file]) => (typeof file === 'string' ? 'text/plain' : file.type)).find((type) => !EDIT_TYPES.includes(type));
				if (unsupported) {
					return send(400, invalid(`Invalid file 'image': unsupported mimetype ('${unsupported}'). Supported file formats are 'image/jpeg', 'image/png', and 'image/webp'.`, 'image', 'unsupported_file_mimetype'));
				}
			}
			const created = Math.floor(Date.now() / 1000);
			if (gptImage || fields.response_format === 'b64_json') return send(200, { created, data: [{ b64_json: host.image.toString('base64') }] });
			send(200, { created, data: [{ url: `${host.origin}/files/image.png`, revised_prompt: fields.prompt }] });
		},
		broken: (kind) => ({ created: Math.floor(Date.now() / 1000), data: kind === 'empty' ? [] : [{ b64_json: NOT_AN_IMAGE }] }),
	});
}

/** What LocalAI understood of one request to `/v1/images/generations`. */
export interface LocalAiDrawing {
	model: unknown;
	positive: string;
	negative: string;
	seed: unknown;
	width: number;
	height: number;
	/** The img2img source decoded from `file` (the type its first bytes show), when it decoded. */
	source?: { type: string; size: number };
}

export interface LocalAiHost extends ImageApiHost {
	drawings: LocalAiDrawing[];
}

/** LocalAI's error answer (schema.ErrorResponse): `{ error: { code, message } }`. */
const localAiError = (code: number, message: string) => ({ error: { code, message } });

/** LocalAI's processImageFile: anything but a URL must be standard base64, or the source is dropped. */
function localAiSource(file: unknown): LocalAiDrawing['source'] {
	if (typeof file !== 'string' || !file || file.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(file)) return undefined;
	const bytes = Buffer.from(file, 'base64');
	const type = bytes[0] === 0x89 ? 'image/png' : bytes[0] === 0xff ? 'image/jpeg' : bytes.subarray(8, 12).toString() === 'WEBP' ? 'image/webp' : 'application/octet-stream';
	return { type, size: bytes.length };
}

/** LocalAI's ImageEndpoint: what it reads of the JSON body, and its answer. */
const localAiRoute: Route = (call, send, host) => {
	const generation = call.method === 'POST' && (call.path === '/v1/images/generations' || call.path === '/images/generations');
	if (!generation) return send(404, localAiError(404, 'Resource not found'));
	const body = call.json ?? {};
	const size = typeof body.size === 'string' && body.size.includes('x') ? body.size : '512x512';
	const [width, height] = String(size).split('x').map(Number);
	if (String(size).split('x').length !== 2 || !Number.isInteger(width) || !Number.isInteger(height)) return send(500, localAiError(500, "invalid value for 'size'"));
	const [positive = '', negative = ''] = String(body.prompt ?? '').split('|');
	const source = localAiSource(body.file);
	(host as LocalAiHost).drawings.push({ model: body.model, positive, negative, seed: body.seed, width: width!, height: height!, ...(source ? { source } : {}) });
	const created = Math.floor(Date.now() / 1000);
	if (body.response_format === 'b64_json') return send(200, { created, data: [{ b64_json: host.image.toString('base64') }] });
	send(200, { created, data: [{ url: `${host.origin}/generated-images/b64001.png` }] });
};

export async function startLocalAiHost(): Promise<LocalAiHost> {
	const host = Object.assign(
		await startImageApiHost({
			filesAt: '/generated-images/',
			route: localAiRoute,
			broken: (kind) => ({ created: Math.floor(Date.now() / 1000), data: kind === 'empty' ? [] : [{ b64_json: NOT_AN_IMAGE }] }),
		}),
		{ drawings: [] as LocalAiDrawing[] },
	);
	const reset = host.reset;
	host.reset = () => {
		reset();
		host.drawings.length = 0;
	};
	return host;
}

export { startA1111Host } from './a1111-host';
