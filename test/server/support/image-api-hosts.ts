/**
 * Loopback stand-ins for the synchronous image APIs people run or rent themselves, each following
 * its published API:
 * - OpenAI's images API (`POST /v1/images/generations`, multipart `POST /v1/images/edits`): refuses
 *   an unknown field as OpenAI does (400 `unknown_parameter` naming it), refuses `response_format`
 *   for gpt-image models and a size the model does not take, answers `b64_json` (gpt-image, or when
 *   asked) or a `url` it serves itself (dall-e's default). `acceptsNegativePrompt` makes it LocalAI,
 *   which takes `negative_prompt`.
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
	/** Serves `GET /files/…` (its image, no key needed), for answers that give a URL. */
	servesFiles?: boolean;
}

async function startImageApiHost({ route, broken, onDrawStarted, servesFiles }: HostBehaviour): Promise<ImageApiHost> {
	const scripted: NextAnswer[] = [];
	const withForm = async (call: ImageApiCall): Promise<ImageApiCall> => {
		const type = call.headers['content-type'] ?? '';
		if (!type.startsWith('multipart/form-data')) return call;
		const form = await new Request('http://stand-in', { method: 'POST', headers: { 'content-type': type }, body: call.body }).formData();
		return { ...call, form: [...form.entries()].map(([name, value]) => [name, typeof value === 'string' ? value : { type: value.type, size: value.size }]) };
	};
	const recorder = await startRecordingServer<ImageApiCall>((call, response) => {
		if (servesFiles && call.method === 'GET' && call.path.startsWith('/files/')) return void response.writeHead(200, { 'content-type': 'image/png' }).end(host.image);
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

export interface OpenAiHostOptions {
	/** The key it takes (`Authorization: Bearer …`); none: it takes any request, as LocalAI does. */
	apiKey?: string;
	/** LocalAI: takes `negative_prompt`. */
	acceptsNegativePrompt?: boolean;
}

const invalid = (message: string, param: string | null, code: string) => ({ error: { message, type: 'invalid_request_error', param, code } });

export async function startOpenAiHost(options: OpenAiHostOptions = {}): Promise<ImageApiHost> {
	return await startImageApiHost({
		servesFiles: true,
		route: (call, send, host) => {
			if (options.apiKey && call.headers.authorization !== `Bearer ${options.apiKey}`) {
				return send(401, invalid('Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.', null, 'invalid_api_key'));
			}
			const edit = call.method === 'POST' && call.path === '/v1/images/edits';
			if (!edit && !(call.method === 'POST' && call.path === '/v1/images/generations')) return send(404, invalid(`Invalid URL (${call.method} ${call.path})`, null, 'unknown_url'));
			const fields: Record<string, unknown> = edit ? Object.fromEntries((call.form ?? []).filter(([name]) => !name.startsWith('image'))) : (call.json ?? {});
			const known = [...(edit ? EDIT_FIELDS : GENERATION_FIELDS), ...(options.acceptsNegativePrompt ? ['negative_prompt'] : [])];
			const unknown = Object.keys(fields).find((name) => !known.includes(name));
			if (unknown) return send(400, invalid(`Unknown parameter: '${unknown}'.`, unknown, 'unknown_parameter'));
			const model = String(fields.model ?? 'dall-e-2');
			const gptImage = model.startsWith('gpt-image');
			if (gptImage && fields.response_format !== undefined) return send(400, invalid("Unknown parameter: 'response_format'.", 'response_format', 'unknown_parameter'));
			if (typeof fields.prompt !== 'string' || !fields.prompt) return send(400, invalid("Missing required parameter: 'prompt'.", 'prompt', 'missing_required_parameter'));
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
			}
			const created = Math.floor(Date.now() / 1000);
			if (gptImage || fields.response_format === 'b64_json') return send(200, { created, data: [{ b64_json: host.image.toString('base64') }] });
			send(200, { created, data: [{ url: `${host.origin}/files/image.png`, revised_prompt: fields.prompt }] });
		},
		broken: (kind) => ({ created: Math.floor(Date.now() / 1000), data: kind === 'empty' ? [] : [{ b64_json: NOT_AN_IMAGE }] }),
	});
}

export { startA1111Host } from './a1111-host';
