/**
 * Loopback stand-ins for the model hosts, answering with the request and response shapes their
 * public documentation gives (see the provider files in server/src/generation/providers/):
 * Replicate's predictions and files APIs, Pruna's P-API and Ideogram's generate endpoint. Every request is
 * recorded; any route can be made to fail, rate-limit or hang for the next calls.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedCall {
	method: string;
	path: string;
	headers: http.IncomingHttpHeaders;
	body: Buffer;
	json?: any;
	/** When the request had arrived whole (Date.now()). */
	at: number;
}

export interface Scripted {
	status: number;
	body?: unknown;
	headers?: Record<string, string>;
	/** Never answer (the connection stays open until the client gives up). */
	hang?: boolean;
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
	callsTo(method: string, pathPrefix: string): RecordedCall[];
	reset(): void;
	close(): Promise<void>;
}

export async function startFakeHosts(): Promise<FakeHosts> {
	let image: Buffer = Buffer.alloc(0);
	let pendingPolls = 0;
	const calls: RecordedCall[] = [];
	const scripts: Array<{ method: string; prefix: string; answer: Scripted }> = [];
	const polls = new Map<string, number>();
	let nextId = 1;
	/** Replicate's files are numbered from 1 after each reset: `rf1`, `rf2`, … in the order they arrive. */
	let nextReplicateFile = 1;

	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			const body = Buffer.concat(chunks);
			const call: RecordedCall = { method: request.method ?? '', path: request.url ?? '', headers: request.headers, body, at: Date.now() };
			if ((request.headers['content-type'] ?? '').includes('json')) call.json = JSON.parse(body.toString() || 'null');
			calls.push(call);
			const scripted = scripts.findIndex((entry) => entry.method === call.method && call.path.startsWith(entry.prefix));
			if (scripted >= 0) {
				const { answer } = scripts.splice(scripted, 1)[0]!;
				if (!answer.hang) sendJson(response, answer.status, answer.body ?? {}, answer.headers);
				return;
			}
			route(call, response);
		});
	});

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
			const id = `r${nextId++}`;
			polls.set(id, pendingPolls);
			return sendJson(response, 201, prediction(id, pendingPolls > 0 ? 'starting' : 'succeeded'));
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
		const replicateGet = /^\/v1\/predictions\/(r\d+)$/.exec(path);
		if (method === 'GET' && replicateGet) {
			const id = replicateGet[1]!;
			const left = polls.get(id) ?? 0;
			if (left < 0) return sendJson(response, 200, prediction(id, 'canceled'));
			polls.set(id, left - 1);
			return sendJson(response, 200, prediction(id, left > 1 ? 'processing' : 'succeeded'));
		}
		const replicateCancel = /^\/v1\/predictions\/(r\d+)\/cancel$/.exec(path);
		if (method === 'POST' && replicateCancel) {
			polls.set(replicateCancel[1]!, -1);
			return sendJson(response, 200, prediction(replicateCancel[1]!, 'canceled'));
		}

		// Pruna
		if (method === 'POST' && path === '/v1/files') {
			const id = `f${nextId++}`;
			return sendJson(response, 200, { id, filename: 'input.png', content_type: 'image/png', size: call.body.length, urls: { get: `https://files.pruna.example/${id}` } });
		}
		if (method === 'POST' && path === '/v1/predictions') {
			const id = `p${nextId++}`;
			polls.set(id, pendingPolls);
			if (pendingPolls === 0 && call.headers['try-sync'] === 'true') {
				return sendJson(response, 200, { status: 'succeeded', generation_url: `${origin}/v1/predictions/delivery/xy/${id}/output.png` });
			}
			return sendJson(response, 200, { id, model: call.headers.model, input: call.json?.input, get_url: `${origin}/v1/predictions/status/${id}` });
		}
		const prunaStatus = /^\/v1\/predictions\/status\/(p\d+)$/.exec(path);
		if (method === 'GET' && prunaStatus) {
			const id = prunaStatus[1]!;
			const left = (polls.get(id) ?? 0) - 1;
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

	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		origin,
		calls,
		setImage: (bytes) => (image = bytes),
		script(method, pathPrefix, answer, count = 1) {
			for (let i = 0; i < count; i++) scripts.push({ method, prefix: pathPrefix, answer });
		},
		setPendingPolls: (count) => (pendingPolls = count),
		callsTo: (method, prefix) => calls.filter((call) => call.method === method && call.path.startsWith(prefix)),
		reset() {
			calls.length = 0;
			scripts.length = 0;
			pendingPolls = 0;
			nextReplicateFile = 1;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
