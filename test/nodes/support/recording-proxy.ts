/**
 * A loopback pass-through in front of the real server: it records every request the nodes send
 * (to prove that invalid parameters send nothing), measures how many run at once, and can answer
 * the next requests itself with a chosen fault (a 503, a 429) before passing traffic on again.
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

export interface RecordingProxy {
	/** The proxy's base URL: origin + /v1, like the server's. */
	baseUrl: string;
	requests: RecordedRequest[];
	maxInFlight(): number;
	/** The next `count` requests are answered with `fault` and never reach the server. */
	failNext(fault: Fault, count?: number): void;
	/** The next `count` requests reach the server, but its answer is lost: the node gets a 503 instead. */
	loseNextAnswers(count?: number): void;
	reset(): void;
	close(): Promise<void>;
}

export async function startRecordingProxy(targetOrigin: string): Promise<RecordingProxy> {
	const target = new URL(targetOrigin);
	const requests: RecordedRequest[] = [];
	const faults: Fault[] = [];
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

		const fault = faults.shift();
		if (fault) {
			request.resume();
			request.on('end', () => {
				record.response = { status: fault.status, headers: { ...fault.headers } };
				response.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers }).end(JSON.stringify(fault.body));
			});
			return;
		}
		const loseAnswer = answersToLose > 0;
		if (loseAnswer) answersToLose--;
		const upstream = http.request(
			{ hostname: target.hostname, port: target.port, method: request.method, path: request.url, headers: request.headers },
			(answer) => {
				record.response = { status: answer.statusCode ?? 502, headers: answer.headers };
				if (loseAnswer) {
					answer.resume();
					answer.on('end', () => response.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end(JSON.stringify(LOST_ANSWER)));
					return;
				}
				response.writeHead(answer.statusCode ?? 502, answer.headers);
				answer.pipe(response);
			},
		);
		upstream.on('error', (error) => response.destroy(error));
		request.pipe(upstream);
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		baseUrl: `${origin}/v1`,
		requests,
		maxInFlight: () => maxInFlight,
		failNext(fault, count = 1) {
			for (let i = 0; i < count; i++) faults.push(fault);
		},
		loseNextAnswers(count = 1) {
			answersToLose += count;
		},
		reset() {
			requests.length = 0;
			faults.length = 0;
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
