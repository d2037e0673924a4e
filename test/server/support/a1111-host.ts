/**
 * A loopback stand-in of Stable Diffusion WebUI's API (AUTOMATIC1111, Forge), following its own
 * source:
 * - `POST /sdapi/v1/txt2img` and `img2img` (modules/api/api.py) draw inside `with self.queue_lock`:
 *   one drawing at a time, the others waiting for the lock in the order they came. A client that
 *   leaves changes nothing: the endpoint runs in a worker thread that does not watch the socket,
 *   so a waiting request still draws when its turn comes.
 * - `POST /sdapi/v1/interrupt` calls `shared.state.interrupt()`, which names no task: it stops
 *   whatever is drawing now, and that drawing still answers 200 with the image as far as it got.
 *   `state.begin()` clears the flag, so an interrupt while nothing draws stops nothing later.
 * - `force_task_id` (1.6 and later) names the task; `POST /internal/progress` with `{ id_task }`
 *   (modules/progress.py) says whether it is `active`, `queued` or `completed`. `beforeTaskIds`
 *   makes it an older WebUI, whose request model has no such field and drops it.
 * - An unset `steps` is the API model's default, 50 (StableDiffusionProcessing), not the UI's 20.
 * - A field of the wrong type is FastAPI's 422 `{ detail: [{ loc, msg, type }] }`.
 * Every request is recorded; `next` replaces the next drawing's answer; `drawMs` makes each drawing
 * take that long; `draws` lists the drawings that took the lock, with how each ended.
 */
import { randomUUID } from 'node:crypto';
import type http from 'node:http';
import type { ImageApiCall, ImageApiHost, NextAnswer } from './image-api-hosts';
import { startRecordingServer } from './recording-server';

/** One drawing that took the queue lock. */
export interface A1111Draw {
	prompt: string;
	steps: number;
	/** `resize_mode` of an img2img (0 "Just resize" when unset), undefined for txt2img. */
	resizeMode?: number;
	taskId: string;
	/** Stopped by `/sdapi/v1/interrupt` before its last step. */
	interrupted: boolean;
	/** Its client had gone before it answered. */
	clientGone: boolean;
}

export interface A1111Host extends ImageApiHost {
	draws: A1111Draw[];
	/** Requests waiting for the queue lock now. */
	waiting(): number;
	/** A WebUI before 1.6: `force_task_id` is dropped, each task named by WebUI itself. */
	beforeTaskIds: boolean;
	/** Resolves once `count` drawings have begun (taken the lock). */
	drawsBegun(count: number): Promise<void>;
}

/** StableDiffusionProcessing's defaults for fields the API request leaves unset. */
const API_DEFAULT_STEPS = 50;
/** Fields WebUI's request models type as whole numbers. */
const INTEGER_FIELDS = ['seed', 'width', 'height', 'steps', 'batch_size', 'n_iter', 'resize_mode'];
const NOT_AN_IMAGE = Buffer.from('this is not an image').toString('base64');

type Send = (status: number, body: unknown, headers?: Record<string, string>) => void;

export async function startA1111Host(): Promise<A1111Host> {
	const scripted: NextAnswer[] = [];
	const lock = new QueueLock();
	const tasks = new TaskBook();
	let current: { draw: A1111Draw; finish: () => void } | undefined;
	const begun: Array<() => void> = [];

	const draw = async (call: ImageApiCall, response: http.ServerResponse, send: Send) => {
		const body = call.json ?? {};
		const taskId = typeof body.force_task_id === 'string' && !host.beforeTaskIds ? body.force_task_id : `task(${randomUUID()})`;
		tasks.queue(taskId);
		await lock.acquire();
		const entry: A1111Draw = {
			prompt: String(body.prompt ?? ''),
			steps: body.steps ?? API_DEFAULT_STEPS,
			...(call.path.endsWith('/img2img') ? { resizeMode: body.resize_mode ?? 0 } : {}),
			taskId,
			interrupted: false,
			clientGone: false,
		};
		host.draws.push(entry);
		tasks.start(taskId);
		// Taken as the drawing begins: the answer a test scripted belongs to the next drawing, not to one that waited.
		const next = scripted.shift();
		begun.splice(0).forEach((wake) => wake());
		await new Promise<void>((resolve) => {
			const timer = setTimeout(resolve, host.drawMs);
			current = { draw: entry, finish: () => (clearTimeout(timer), resolve()) };
		});
		current = undefined;
		tasks.finish(taskId);
		entry.clientGone = response.destroyed;
		lock.release();
		answerDrawing(call, response, send, next, host.image);
	};

	const recorder = await startRecordingServer<ImageApiCall>((call, response) => {
		const send: Send = (status, answer, headers = {}) => {
			if (!response.destroyed) response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(answer));
		};
		if (call.method !== 'POST') return send(404, { detail: 'Not Found' });
		if (call.path === '/sdapi/v1/interrupt') {
			if (current) {
				current.draw.interrupted = true;
				current.finish();
			}
			return send(200, {});
		}
		if (call.path === '/internal/progress') return send(200, tasks.progress(String(call.json?.id_task ?? '')));
		if (call.path !== '/sdapi/v1/txt2img' && call.path !== '/sdapi/v1/img2img') return send(404, { detail: 'Not Found' });
		const refusal = validationRefusal(call);
		if (refusal) return send(422, refusal);
		void draw(call, response, send);
	});

	const host: A1111Host = {
		origin: recorder.origin,
		calls: recorder.calls,
		image: Buffer.alloc(0),
		drawMs: 0,
		draws: [],
		beforeTaskIds: false,
		waiting: () => lock.waiting(),
		drawsBegun: async (count) => {
			while (host.draws.length < count) await new Promise<void>((resolve) => begun.push(resolve));
		},
		next: (answer) => void scripted.push(answer),
		reset() {
			host.calls.length = 0;
			host.draws.length = 0;
			scripted.length = 0;
			host.drawMs = 0;
			host.beforeTaskIds = false;
		},
		close: async () => {
			current?.finish();
			await recorder.close();
		},
	};
	return host;
}

/** FastAPI's 422 for a field of the wrong type, or img2img without its init image. */
function validationRefusal(call: ImageApiCall): unknown {
	const body = call.json ?? {};
	const wrong = INTEGER_FIELDS.find((name) => body[name] !== undefined && !Number.isInteger(body[name]));
	if (wrong) return { detail: [{ loc: ['body', wrong], msg: 'value is not a valid integer', type: 'type_error.integer' }] };
	if (call.path.endsWith('/img2img') && !(Array.isArray(body.init_images) && body.init_images.length > 0)) {
		return { detail: [{ loc: ['body', 'init_images'], msg: 'field required', type: 'value_error.missing' }] };
	}
	return undefined;
}

/** The drawing's answer: the image (as far as it got, when interrupted), or what a test scripted. */
function answerDrawing(call: ImageApiCall, response: http.ServerResponse, send: Send, next: NextAnswer | undefined, image: Buffer): void {
	const body = call.json ?? {};
	if (next === 'html') return void (response.destroyed || response.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><html><body>Welcome</body></html>'));
	if (next === 'empty' || next === 'not-image') return send(200, { images: next === 'empty' ? [] : [NOT_AN_IMAGE], parameters: {}, info: '{}' });
	if (next !== undefined) return send(next.status, next.body, next.headers);
	const parameters = { ...body, init_images: undefined };
	send(200, { images: [image.toString('base64')], parameters, info: JSON.stringify({ prompt: body.prompt, seed: body.seed, width: body.width, height: body.height }) });
}

/** `threading.Lock` as WebUI's queue_lock uses it: one holder, the others waiting in turn. */
class QueueLock {
	private held = false;
	private readonly queue: Array<() => void> = [];

	async acquire(): Promise<void> {
		if (!this.held) {
			this.held = true;
			return;
		}
		await new Promise<void>((resolve) => this.queue.push(resolve));
	}

	release(): void {
		const next = this.queue.shift();
		if (next) next();
		else this.held = false;
	}

	waiting(): number {
		return this.queue.length;
	}
}

/** modules/progress.py: the pending tasks, the current one, the last finished. */
class TaskBook {
	private readonly pending = new Set<string>();
	private current: string | undefined;
	private readonly finished: string[] = [];

	queue(id: string): void {
		this.pending.add(id);
	}

	start(id: string): void {
		this.current = id;
		this.pending.delete(id);
	}

	finish(id: string): void {
		if (this.current === id) this.current = undefined;
		this.finished.push(id);
		if (this.finished.length > 16) this.finished.shift();
	}

	progress(id: string) {
		const active = id === this.current;
		const queued = this.pending.has(id);
		return { active, queued, completed: this.finished.includes(id), paused: false, ...(active ? { progress: 0.5 } : { id_live_preview: -1, textinfo: queued ? 'Queued...' : 'Waiting...' }) };
	}
}
