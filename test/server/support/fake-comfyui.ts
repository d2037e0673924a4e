/**
 * A loopback stand-in for a ComfyUI server, answering as ComfyUI's server.py and execution.py do:
 * `POST /prompt` validates the workflow as execution.py `validate_inputs` does
 * (support/fake-comfyui-validation.ts: "42" for an INT input is 42; 400 `{ error, node_errors }`
 * for a value that does not convert, one out of bounds, an unknown model file, a LoadImage naming
 * no uploaded file) and queues it under the client's `prompt_id` when the body has one, else a
 * UUID of its own (`{ prompt_id, number, node_errors }`; a prompt id sent twice is queued twice,
 * as ComfyUI does not look; `takesClientPromptId(false)`: always its own, as older ComfyUI did);
 * one prompt runs at a time for `runMs`;
 * `GET /history/<id>` is `{}` until the prompt ended, then its outputs and status (an
 * `execution_error` or `execution_interrupted` message when it failed), until `POST /history
 * { delete }` forgets it; `GET /view` serves the PNG an output names (output files stay: ComfyUI
 * has no route to delete them); `POST /upload/image` stores a multipart `image`; `GET /queue`,
 * `POST /queue { delete }` and `POST /interrupt`, which stops whatever runs, as ComfyUI did before
 * it took a `prompt_id` (PR #9607), or with `interruptNamesPrompt(true)` as since: only the
 * prompt named, when it is the one running. Every request is recorded; the next answers of a
 * route can be scripted, delayed, or lost after ComfyUI did the work (`loseNextAnswer`).
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import { pythonText, validateComfyWorkflow } from './fake-comfyui-validation';
import { scriptedAnswers, startRecordingServer, type RecordedCall } from './recording-server';

export interface ComfyScripted {
	/** 0: the connection is cut without an answer; absent: the route's own answer (after `delayMs`). */
	status?: number;
	/** JSON, or a string sent as it is with `contentType`. */
	body?: unknown;
	contentType?: string;
	/** ComfyUI did the call's work (queued the prompt) before this answer replaced its own: a proxy that gave up, a cut connection. */
	afterRoute?: boolean;
	/** The answer goes out this much later (the work, when done, is done at once). */
	delayMs?: number;
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
	/** The next call of `method` on `pathPrefix` does its work, but its answer is `status` (0: the connection cut) instead. */
	loseNextAnswer(method: string, pathPrefix: string, status: number): void;
	/** `POST /interrupt { prompt_id }` as ComfyUI since PR #9607 takes it (true), or as before, stopping whatever runs (false, the default). */
	interruptNamesPrompt(on: boolean): void;
	/** `POST /prompt` takes the client's `prompt_id` (true, the default), or names every prompt itself as older ComfyUI did (false). */
	takesClientPromptId(on: boolean): void;
	/** Queues a workflow as another client would, and answers its prompt id. */
	queueDirectly(workflow: unknown, clientId?: string): Promise<string>;
	/** Ids running and waiting. */
	queue(): { running: string[]; pending: string[] };
	/** Names of the uploaded input images. */
	uploads(): string[];
	/** Ids of the prompts whose history ComfyUI keeps. */
	historyIds(): string[];
	/** Output files written (`output/…`, `temp/…`). */
	outputFiles(): string[];
	reset(): void;
	close(): Promise<void>;
}

export async function startFakeComfyUI(): Promise<FakeComfyUI> {
	let image: Buffer = Buffer.alloc(0);
	let runMs = 50;
	let nextFailure: ExecutionError | undefined;
	let number = 0;
	let outputCount = 0;
	let interruptByPromptId = false;
	let clientPromptIds = true;
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

	/** ComfyUI's validate_prompt: the node_errors of the workflow's nodes (converting their inputs), or none. */
	function validate(workflow: Prompt['workflow']): Record<string, unknown> {
		const outputs = Object.keys(workflow).filter((id) => ['SaveImage', 'PreviewImage'].includes(workflow[id]!.class_type));
		const refused = validateComfyWorkflow(workflow, { models: COMFY_MODEL_FILES, inputs: () => [...inputs] });
		return Object.fromEntries(Object.entries(refused).map(([id, errors]) => [id, { errors, dependent_outputs: outputs, class_type: workflow[id]!.class_type }]));
	}

	function queuePrompt(body: { prompt?: unknown; client_id?: string; prompt_id?: unknown }): { status: number; body: unknown } {
		if (typeof body?.prompt !== 'object' || body.prompt === null) return { status: 400, body: { error: { type: 'no_prompt', message: 'No prompt provided', details: 'No prompt provided', extra_info: {} }, node_errors: {} } };
		// ComfyUI converts the inputs of the prompt it was sent; the recorded call keeps what was sent.
		const workflow = structuredClone(body.prompt) as Prompt['workflow'];
		const nodeErrors = validate(workflow);
		if (Object.keys(nodeErrors).length > 0) {
			return { status: 400, body: { error: { type: 'prompt_outputs_failed_validation', message: 'Prompt outputs failed validation', details: '', extra_info: {} }, node_errors: nodeErrors } };
		}
		// server.py post_prompt: `str(json_data.get("prompt_id", uuid.uuid4()))`.
		const id = body.prompt_id === undefined || !clientPromptIds ? randomUUID() : pythonText(body.prompt_id);
		const prompt: Prompt = { number: number++, id, workflow, clientId: body.client_id, fails: nextFailure };
		nextFailure = undefined;
		pending.push(prompt);
		startNext();
		return { status: 200, body: { prompt_id: prompt.id, number: prompt.number, node_errors: {} } };
	}

	/** server.py post_interrupt: with a `prompt_id` (since PR #9607) only that prompt when it runs; without, whatever runs. */
	function interrupt(body: { prompt_id?: unknown } | undefined): void {
		if (!running) return;
		const named = interruptByPromptId ? body?.prompt_id : undefined;
		if (named === undefined || named === null || named === '' || named === running.prompt.id) finish(running.prompt, true);
	}

	/** server.py post_history: `clear`, and `delete` of the listed prompt ids. */
	function forget(body: { clear?: unknown; delete?: unknown } | undefined): void {
		if (body?.clear) history.clear();
		for (const id of Array.isArray(body?.delete) ? body.delete : []) history.delete(id as string);
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
			interrupt(call.json);
			return { status: 200 };
		}
		if (call.method === 'POST' && url.pathname === '/history') {
			forget(call.json);
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

	function send(response: ServerResponse, answer: { status: number; body?: unknown; bytes?: Buffer }): void {
		if (answer.bytes) response.writeHead(answer.status, { 'content-type': 'image/png' }).end(answer.bytes);
		else if (answer.body === undefined) response.writeHead(answer.status).end();
		else response.writeHead(answer.status, { 'content-type': 'application/json' }).end(JSON.stringify(answer.body));
	}

	/** A scripted answer: in place of the route, or after it did its work; cut, replaced or late. */
	function sendScripted(call: RecordedCall, response: ServerResponse, scripted: ComfyScripted): void {
		const routed = scripted.afterRoute || scripted.status === undefined ? route(call, new URL(call.path, 'http://comfyui.local')) : undefined;
		const answer = () => {
			if (scripted.status === undefined) return send(response, routed!);
			if (scripted.status === 0) return void response.socket?.destroy();
			const text = typeof scripted.body === 'string' ? scripted.body : JSON.stringify(scripted.body ?? {});
			response.writeHead(scripted.status, { 'content-type': scripted.contentType ?? 'application/json' }).end(text);
		};
		if (scripted.delayMs) setTimeout(answer, scripted.delayMs);
		else answer();
	}

	const recorder = await startRecordingServer((call, response) => {
		const scripted = scripts.take(call);
		if (scripted) sendScripted(call, response, scripted);
		else send(response, route(call, new URL(call.path, 'http://comfyui.local')));
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
		loseNextAnswer: (method, prefix, status) => scripts.add(method, prefix, { status, afterRoute: true, body: '<html><body><h1>502 Bad Gateway</h1></body></html>', contentType: 'text/html' }),
		interruptNamesPrompt: (on) => void (interruptByPromptId = on),
		takesClientPromptId: (on) => void (clientPromptIds = on),
		async queueDirectly(workflow, clientId = 'someone-else') {
			const response = await fetch(`${origin}/prompt`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: workflow, client_id: clientId }) });
			const answer = (await response.json()) as { prompt_id: string };
			return answer.prompt_id;
		},
		queue: () => ({ running: running ? [running.prompt.id] : [], pending: pending.map((prompt) => prompt.id) }),
		uploads: () => [...inputs],
		historyIds: () => [...history.keys()],
		outputFiles: () => [...files.keys()],
		reset() {
			calls.length = 0;
			scripts.clear();
			pending.length = 0;
			if (running) clearTimeout(running.timer);
			running = undefined;
			history.clear();
			files.clear();
			inputs.clear();
			nextFailure = undefined;
			runMs = 50;
			interruptByPromptId = false;
			clientPromptIds = true;
		},
		close() {
			if (running) clearTimeout(running.timer);
			return recorder.close();
		},
	};
}
