/**
 * What every loopback stand-in of a host shares: an HTTP server on 127.0.0.1 that reads each
 * request whole, records it (JSON bodies parsed) and hands it to the stand-in's routes, and answers
 * a test scripts for the next calls of a method and path.
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

export interface RecordingServer<Call extends RecordedCall> {
	origin: string;
	calls: Call[];
	callsTo(method: string, pathPrefix: string): Call[];
	/** Cuts every connection, then stops listening. */
	close(): Promise<void>;
}

/**
 * Starts the server: `answer` gets each call once it is recorded. `prepare` may add to a call
 * (a parsed form) before it is recorded.
 */
export async function startRecordingServer<Call extends RecordedCall = RecordedCall>(
	answer: (call: Call, response: http.ServerResponse) => void,
	prepare: (call: RecordedCall) => Call | Promise<Call> = (call) => call as Call,
): Promise<RecordingServer<Call>> {
	const calls: Call[] = [];
	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', async () => {
			const body = Buffer.concat(chunks);
			const recorded: RecordedCall = { method: request.method ?? '', path: request.url ?? '', headers: request.headers, body, at: Date.now() };
			if ((request.headers['content-type'] ?? '').includes('json')) recorded.json = JSON.parse(body.toString() || 'null');
			const call = await prepare(recorded);
			calls.push(call);
			answer(call, response);
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		calls,
		callsTo: (method, prefix) => calls.filter((call) => call.method === method && call.path.startsWith(prefix)),
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}

/** Answers scripted for the next calls of a method on a path prefix, each taken by the first call it matches. */
export function scriptedAnswers<Answer>() {
	const entries: Array<{ method: string; prefix: string; answer: Answer }> = [];
	return {
		add(method: string, prefix: string, answer: Answer, count = 1): void {
			for (let i = 0; i < count; i++) entries.push({ method, prefix, answer });
		},
		/** The answer scripted for this call, now used up; undefined when there is none. */
		take(call: RecordedCall): Answer | undefined {
			const index = entries.findIndex((entry) => entry.method === call.method && call.path.startsWith(entry.prefix));
			return index >= 0 ? entries.splice(index, 1)[0]!.answer : undefined;
		},
		clear: () => void (entries.length = 0),
	};
}
