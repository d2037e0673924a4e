/**
 * A loopback stand-in for a ComfyUI server, answering as ComfyUI's server.py and execution.py do:
 * `POST /prompt` validates the workflow (400 `{ error, node_errors }` for an unknown model file, an
 * input value of the wrong type, a LoadImage naming no uploaded file, a placeholder left unbound)
 * and queues it (`{ prompt_id, number, node_errors }`); one prompt runs at a time for `runMs`;
 * `GET /history/<id>` is `{}` until the prompt ended, then its outputs and status (an
 * `execution_error` or `execution_interrupted` message when it failed); `GET /view` serves the
 * PNG an output names; `POST /upload/image` stores a multipart `image`; `GET /queue`,
 * `POST /queue { delete }` and `POST /interrupt` (which, like ComfyUI before it took a prompt id,
 * stops whatever runs). Every request is recorded; the next answers of a route can be scripted.
 */
import { randomUUID } from 'node:crypto';
import { scriptedAnswers, startRecordingServer, type RecordedCall } from './recording-server';

export interface ComfyScripted {
	status: number;
	/** JSON, or a string sent as it is with `contentType`. */
	body?: unknown;
	contentType?: string;
}

export interface ExecutionError {
	node_id: string;
	node_type: string;
	exception_type: string;
	exception_message: string;
}

interface Prompt {
	number: number;
	id: string;
	workflow: Record<string, { class_type: string; inputs: Record<string, unknown> }>;
	clientId?: string;
	fails?: ExecutionError;
}

/** The model files the stand-in has, as ComfyUI lists them for its loaders. */
export const COMFY_MODEL_FILES = ['flux1-schnell-fp8.safetensors', 'sd_xl_base_1.0.safetensors'];

export interface FakeComfyUI {
	origin: string;
	calls: RecordedCall[];
	callsTo(method: string, pathPrefix: string): RecordedCall[];
	/** The PNG every output is. */
	setImage(bytes: Buffer): void;
	/** How long each prompt runs once it is first in line. */
	setRunMs(ms: number): void;
	/** The next prompt queued fails at run time with this error. */
	failNext(error: ExecutionError): void;
	/** The next answer to `method` on a path starting with `pathPrefix`. */
	script(method: string, pathPrefix: string, answer: ComfyScripted): void;
	/** Queues a workflow as another client would, and answers its prompt id. */
	queueDirectly(workflow: unknown, clientId?: string): Promise<string>;
	/** Ids running and waiting. */
	queue(): { running: string[]; pending: string[] };
	/** Names of the uploaded input images. */
	uploads(): string[];
	reset(): void;
	close(): Promise<void>;
}

export async function startFakeComfyUI(): Promise<FakeComfyUI> {
	let image: Buffer = Buffer.alloc(0);
	let runMs = 50;
	let nextFailure: ExecutionError | undefined;
	let number = 0;
	let outputCount = 0;
	const scripts = scriptedAnswers<ComfyScripted>();
	const pending: Prompt[] = [];
	let running: { prompt: Prompt; timer: NodeJS.Timeout } | undefined;
	const history = new Map<string, unknown>();
	const files = new Map<string, Buffer>();
	const inputs = new Set<string>();

	function startNext(): void {
		if (running || pending.length === 0) return;
		const prompt = pending.shift()!;
		running = { prompt, timer: setTimeout(() => finish(prompt), runMs) };
	}

	function finish(prompt: Prompt, interrupted?: boolean): void {
		if (running?.prompt !== prompt) return;
		clearTimeout(running.timer);
		running = undefined;
		const start = ['execution_start', { prompt_id: prompt.id, timestamp: Date.now() }];
		const record = { prompt: [prompt.number, prompt.id, prompt.workflow, { client_id: prompt.clientId }, []], meta: {} };
		if (interrupted || prompt.fails) {
			const event = interrupted
				? ['execution_interrupted', { prompt_id: prompt.id, node_id: '3', node_type: 'KSampler', executed: [], timestamp: Date.now() }]
				: ['execution_error', { prompt_id: prompt.id, ...prompt.fails, executed: [], traceback: ['  File "execution.py", line 1'], current_inputs: {}, current_outputs: {}, timestamp: Date.now() }];
			history.set(prompt.id, { ...record, outputs: {}, status: { status_str: 'error', completed: false, messages: [start, event] } });
		} else {
			const outputs: Record<string, unknown> = {};
			for (const [id, node] of Object.entries(prompt.workflow)) {
				if (node.class_type !== 'SaveImage' && node.class_type !== 'PreviewImage') continue;
				const type = node.class_type === 'SaveImage' ? 'output' : 'temp';
				const filename = `${String(node.inputs.filename_prefix ?? 'ComfyUI')}_${String(++outputCount).padStart(5, '0')}_.png`;
				files.set(`${type}/${filename}`, image);
				outputs[id] = { images: [{ filename, subfolder: '', type }] };
			}
			history.set(prompt.id, { ...record, outputs, status: { status_str: 'success', completed: true, messages: [start, ['execution_success', { prompt_id: prompt.id, timestamp: Date.now() }]] } });
		}
		startNext();
	}

	/** ComfyUI's validate_prompt, for what the tests need: the errors of each node, or none. */
	function validate(workflow: Prompt['workflow']): Record<string, unknown> {
		const errors: Record<string, unknown> = {};
		for (const [id, node] of Object.entries(workflow)) {
			const problems: Array<{ type: string; message: string; details: string; extra_info: unknown }> = [];
			for (const [name, value] of Object.entries(node.inputs ?? {})) {
				if (typeof value === 'string' && /\{\{.*\}\}/.test(value)) problems.push({ type: 'invalid_input_type', message: 'Placeholder left in the workflow', details: `${name}: ${value}`, extra_info: {} });
				if (['seed', 'noise_seed', 'width', 'height', 'steps'].includes(name) && typeof value !== 'number' && !Array.isArray(value)) {
					problems.push({ type: 'invalid_input_type', message: 'Failed to convert an input value to a INT value', details: `${name}, ${String(value)}`, extra_info: { input_name: name } });
				}
				if (['ckpt_name', 'unet_name'].includes(name) && !COMFY_MODEL_FILES.includes(String(value))) {
					problems.push({ type: 'value_not_in_list', message: 'Value not in list', details: `${name}: '${String(value)}' not in ${JSON.stringify(COMFY_MODEL_FILES)}`, extra_info: { input_name: name } });
				}
			}
			if (node.class_type === 'LoadImage' && !inputs.has(String(node.inputs.image))) {
				problems.push({ type: 'custom_validation_failed', message: 'Failed to validate prompt for output 9', details: `Invalid image file: ${String(node.inputs.image)}`, extra_info: {} });
			}
			if (problems.length > 0) errors[id] = { errors: problems, dependent_outputs: ['9'], class_type: node.class_type };
		}
		return errors;
	}

	function queuePrompt(body: { prompt?: unknown; client_id?: string }): { status: number; body: unknown } {
		if (typeof body?.prompt !== 'object' || body.prompt === null) return { status: 400, body: { error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: [] } };
		const workflow = body.prompt as Prompt['workflow'];
		const nodeErrors = validate(workflow);
		if (Object.keys(nodeErrors).length > 0) {
			return { status: 400, body: { error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} }, node_errors: nodeErrors } };
		}
		const prompt: Prompt = { number: number++, id: randomUUID(), workflow, clientId: body.client_id, fails: nextFailure };
		nextFailure = undefined;
		pending.push(prompt);
		startNext();
		return { status: 200, body: { prompt_id: prompt.id, number: prompt.number, node_errors: {} } };
	}

	const entry = (prompt: Prompt) => [prompt.number, prompt.id, prompt.workflow, { client_id: prompt.clientId }, ['9']];

	function route(call: RecordedCall, url: URL): { status: number; body?: unknown; bytes?: Buffer } {
		if (call.method === 'POST' && url.pathname === '/prompt') return queuePrompt(call.json);
		if (call.method === 'GET' && url.pathname.startsWith('/history/')) {
			const id = decodeURIComponent(url.pathname.slice('/history/'.length));
			return { status: 200, body: history.has(id) ? { [id]: history.get(id) } : {} };
		}
		if (call.method === 'GET' && url.pathname === '/queue') return { status: 200, body: { queue_running: running ? [entry(running.prompt)] : [], queue_pending: pending.map(entry) } };
		if (call.method === 'POST' && url.pathname === '/queue') {
			for (const id of (call.json?.delete ?? []) as string[]) {
				const index = pending.findIndex((prompt) => prompt.id === id);
				if (index >= 0) pending.splice(index, 1);
			}
			return { status: 200 };
		}
		if (call.method === 'POST' && url.pathname === '/interrupt') {
			if (running) finish(running.prompt, true);
			return { status: 200 };
		}
		if (call.method === 'GET' && url.pathname === '/view') {
			const filename = url.searchParams.get('filename') ?? '';
			const type = url.searchParams.get('type') ?? 'output';
			const bytes = files.get(`${type}/${filename}`);
			return bytes ? { status: 200, bytes } : { status: 404 };
		}
		if (call.method === 'POST' && url.pathname === '/upload/image') return upload(call.body.toString('latin1'));
		return { status: 404, body: { error: 'not found' } };
	}

	/** Reads the multipart form's `image` part's file name and `overwrite`; a clash without overwrite gets " (1)". */
	function upload(form: string): { status: number; body?: unknown } {
		const named = /name="image"; filename="([^"]+)"/.exec(form);
		if (!named) return { status: 400 };
		const overwrite = /name="overwrite"\r\n\r\n(true|1)\r\n/.test(form);
		let name = named[1]!;
		for (let copy = 1; !overwrite && inputs.has(name); copy++) name = named[1]!.replace(/(\.[^.]*)?$/, ` (${copy})$1`);
		inputs.add(name);
		return { status: 200, body: { name, subfolder: '', type: 'input' } };
	}

	const recorder = await startRecordingServer((call, response) => {
		const scripted = scripts.take(call);
		if (scripted) {
			const text = typeof scripted.body === 'string' ? scripted.body : JSON.stringify(scripted.body ?? {});
			return void response.writeHead(scripted.status, { 'content-type': scripted.contentType ?? 'application/json' }).end(text);
		}
		const answer = route(call, new URL(call.path, 'http://comfyui.local'));
		if (answer.bytes) response.writeHead(answer.status, { 'content-type': 'image/png' }).end(answer.bytes);
		else if (answer.body === undefined) response.writeHead(answer.status).end();
		else response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
	});
	const { origin, calls } = recorder;

	return {
		origin,
		calls,
		callsTo: recorder.callsTo,
		setImage: (bytes) => void (image = bytes),
		setRunMs: (ms) => void (runMs = ms),
		failNext: (error) => void (nextFailure = error),
		script: (method, prefix, answer) => scripts.add(method, prefix, answer),
		async queueDirectly(workflow, clientId = 'someone-else') {
			const response = await fetch(`${origin}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: workflow, client_id: clientId }) });
			const answer = (await response.json()) as { prompt_id: string };
			return answer.prompt_id;
		},
		queue: () => ({ running: running ? [running.prompt.id] : [], pending: pending.map((prompt) => prompt.id) }),
		uploads: () => [...inputs],
		reset() {
			calls.length = 0;
			scripts.clear();
			pending.length = 0;
			if (running) clearTimeout(running.timer);
			running = undefined;
			history.clear();
			inputs.clear();
			nextFailure = undefined;
			runMs = 50;
		},
		close() {
			if (running) clearTimeout(running.timer);
			return recorder.close();
		},
	};
}
