/**
 * A loopback pass-through in front of the real server: it records every request the nodes send
 * (to prove that invalid parameters send nothing), measures how many run at once, and can answer
 * the next requests itself with a chosen fault (a 503, a 429) before passing traffic on again. As
 * a gateway between a client and the service can, it may also hold a request back a while, drop a
 * request header the service would act on, add headers to the answers, or stall an answer halfway
 * (as a slow network does) to show what the node does with the part that has arrived.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
	method: string;
	path: string;
	contentType: string;
	/** Bytes of the body, counted while streaming it through. */
	bodyBytes: number;
	idempotencyKey?: string;
	/** The `Prefer` header as the node sent it (before any drop). */
	prefer?: string;
	/** When it arrived (Date.now()). */
	at: number;
	/** A JSON body as text (the first 64 KB); multipart bodies are only counted. */
	json?: string;
	/** The answer as it went back to the node, once it has. */
	response?: { status: number; headers: http.IncomingHttpHeaders };
}

const JSON_CAPTURE_BYTES = 64 * 1024;
const LOST_ANSWER = { error: { message: 'The answer was lost on the way', type: 'server_error', param: null, code: 'answer_lost' } };

export interface Fault {
	status: number;
	body: unknown;
	headers?: Record<string, string>;
}

/** A request held back until released, then passed on. */
export interface Hold {
	/** Settles when the held request has arrived. */
	arrived: Promise<void>;
	release(): void;
}

/** An answer stalled halfway until released. */
export interface StalledAnswer {
	/** Settles with the answer's length once half of it has been passed on. */
	halfway: Promise<number>;
	release(): void;
}

export interface RecordingProxy {
	/** The proxy's base URL: origin + /v1, like the server's. */
	baseUrl: string;
	requests: RecordedRequest[];
	maxInFlight(): number;
	/** The next `count` requests (whose path matches `path`, when given) are answered with `fault` and never reach the server. */
	failNext(fault: Fault, count?: number, path?: RegExp): void;
	/** The next request whose path matches is held back until released. */
	holdNext(path: RegExp): Hold;
	/** Requests reach the server without this header (as through a gateway that drops it). */
	dropRequestHeader(name: string): void;
	/** The answer to the next request whose path matches is passed on up to half its Content-Length, then stalls until released. */
	stallAnswerHalfway(path: RegExp): StalledAnswer;
	/** Answers passed on get these headers too. */
	addAnswerHeaders(headers: Record<string, string>): void;
	/** The next `count` requests reach the server, but its answer is lost: the node gets a 503 instead. */
	loseNextAnswers(count?: number): void;
	reset(): void;
	close(): Promise<void>;
}

export async function startRecordingProxy(targetOrigin: string): Promise<RecordingProxy> {
	const target = new URL(targetOrigin);
	const requests: RecordedRequest[] = [];
	const faults: Array<{ fault: Fault; path?: RegExp }> = [];
	const holds: Array<{ path: RegExp; arrive: () => void; released: Promise<void> }> = [];
	const stalls: Array<{ path: RegExp; reached: (length: number) => void; released: Promise<void> }> = [];
	const droppedHeaders = new Set<string>();
	let answerHeaders: Record<string, string> = {};
	let answersToLose = 0;
	let inFlight = 0;
	let maxInFlight = 0;

	const server = http.createServer((request, response) => {
		const record: RecordedRequest = {
			method: request.method ?? '',
			path: request.url ?? '',
			contentType: String(request.headers['content-type'] ?? ''),
			bodyBytes: 0,
			...(request.headers['idempotency-key'] ? { idempotencyKey: String(request.headers['idempotency-key']) } : {}),
			...(request.headers.prefer ? { prefer: String(request.headers.prefer) } : {}),
			at: Date.now(),
		};
		requests.push(record);
		inFlight++;
		maxInFlight = Math.max(maxInFlight, inFlight);
		response.on('close', () => inFlight--);
		const isJson = record.contentType.includes('json');
		request.on('data', (chunk: Buffer) => {
			record.bodyBytes += chunk.length;
			if (isJson && (record.json?.length ?? 0) < JSON_CAPTURE_BYTES) record.json = (record.json ?? '') + chunk.toString('utf8');
		});

		const faultAt = faults.findIndex((entry) => !entry.path || entry.path.test(record.path));
		const fault = faultAt >= 0 ? faults.splice(faultAt, 1)[0]!.fault : undefined;
		if (fault) {
			request.resume();
			request.on('end', () => {
				record.response = { status: fault.status, headers: { ...fault.headers } };
				response.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers }).end(JSON.stringify(fault.body));
			});
			return;
		}
		const holdAt = holds.findIndex((entry) => entry.path.test(record.path));
		if (holdAt >= 0) {
			const hold = holds.splice(holdAt, 1)[0]!;
			// Paused before any data flows; the pipe below resumes it.
			request.pause();
			hold.arrive();
			void hold.released.then(() => passOn(request, response, record));
			return;
		}
		passOn(request, response, record);
	});

	function passOn(request: http.IncomingMessage, response: http.ServerResponse, record: RecordedRequest): void {
		const loseAnswer = answersToLose > 0;
		if (loseAnswer) answersToLose--;
		const headers = Object.fromEntries(Object.entries(request.headers).filter(([name]) => !droppedHeaders.has(name)));
		const upstream = http.request(
			{ hostname: target.hostname, port: target.port, method: request.method, path: request.url, headers },
			(answer) => {
				record.response = { status: answer.statusCode ?? 502, headers: answer.headers };
				if (loseAnswer) {
					answer.resume();
					answer.on('end', () => response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end(JSON.stringify(LOST_ANSWER)));
					return;
				}
				response.writeHead(answer.statusCode ?? 502, { ...answer.headers, ...answerHeaders });
				const stallAt = stalls.findIndex((entry) => entry.path.test(record.path));
				if (stallAt >= 0) stallHalfway(answer, response, stalls.splice(stallAt, 1)[0]!);
				else answer.pipe(response);
			},
		);
		upstream.on('error', (error) => response.destroy(error));
		request.pipe(upstream);
	}
	/** Writes the first half of `answer`, waits for the release, then passes the rest on. */
	function stallHalfway(answer: http.IncomingMessage, response: http.ServerResponse, stall: (typeof stalls)[number]): void {
		const length = Number(answer.headers['content-length']);
		if (!(length > 1)) throw new Error(`stallAnswerHalfway: the answer has no length to halve (Content-Length ${String(answer.headers['content-length'])})`);
		let left = Math.floor(length / 2);
		answer.on('data', (chunk: Buffer) => {
			if (left <= 0) return void response.write(chunk);
			const head = chunk.subarray(0, left);
			left -= head.length;
			response.write(head);
			if (left > 0) return;
			answer.pause();
			stall.reached(length);
			void stall.released.then(() => {
				response.write(chunk.subarray(head.length));
				answer.resume();
			});
		});
		answer.on('end', () => response.end());
	}
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		baseUrl: `${origin}/v1`,
		requests,
		maxInFlight: () => maxInFlight,
		failNext(fault, count = 1, path) {
			for (let i = 0; i < count; i++) faults.push({ fault, ...(path ? { path } : {}) });
		},
		holdNext(path) {
			let arrive = () => undefined as void;
			let release = () => undefined as void;
			const arrived = new Promise<void>((resolve) => (arrive = resolve));
			const released = new Promise<void>((resolve) => (release = resolve));
			holds.push({ path, arrive, released });
			return { arrived, release };
		},
		stallAnswerHalfway(path) {
			let reached: (length: number) => void = () => undefined;
			let release = () => undefined as void;
			const halfway = new Promise<number>((resolve) => (reached = resolve));
			const released = new Promise<void>((resolve) => (release = resolve));
			stalls.push({ path, reached, released });
			return { halfway, release };
		},
		dropRequestHeader(name) {
			droppedHeaders.add(name.toLowerCase());
		},
		addAnswerHeaders(headers) {
			answerHeaders = { ...answerHeaders, ...headers };
		},
		loseNextAnswers(count = 1) {
			answersToLose += count;
		},
		reset() {
			requests.length = 0;
			faults.length = 0;
			holds.length = 0;
			stalls.length = 0;
			droppedHeaders.clear();
			answerHeaders = {};
			answersToLose = 0;
			maxInFlight = 0;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
