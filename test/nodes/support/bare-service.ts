/**
 * A stand-in for another OpenAI-compatible image service on loopback: it answers only the plain
 * shapes — a generation `{ created, data: [{ url }] }` or `{ data: [{ b64_json }] }` with no
 * usage, model, expiry or seed, an upload `{ imageUrl }` — and hosts real image bytes at the URLs
 * it hands out. Each test sets the answer bodies it wants; the service records what it was sent.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BareRequest {
	method: string;
	path: string;
	authorization?: string;
	body: string;
}

/** Builds an answer body from the service's own origin (for the URLs it hosts). */
export type BareAnswer = (origin: string) => unknown;

export interface BareService {
	/** origin + /v1, as a credential's Base URL. */
	baseUrl: string;
	origin: string;
	requests: BareRequest[];
	/** What `POST /v1/images/generations` answers from now on. */
	answerGenerations(answer: BareAnswer): void;
	/** What `POST /v1/uploads` answers from now on. */
	answerUploads(answer: BareAnswer): void;
	/** Serves `bytes` at `path` (e.g. `/images/a.png`) and returns its URL. */
	host(path: string, bytes: Buffer, contentType: string): string;
	close(): Promise<void>;
}

export async function startBareService(): Promise<BareService> {
	const requests: BareRequest[] = [];
	const hosted = new Map<string, { bytes: Buffer; contentType: string }>();
	const answers = new Map<string, BareAnswer>();
	let origin = '';
	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			const path = request.url ?? '';
			requests.push({ method: request.method ?? '', path, authorization: request.headers.authorization, body: Buffer.concat(chunks).toString('utf8') });
			const file = request.method === 'GET' ? hosted.get(path) : undefined;
			const answer = request.method === 'POST' ? answers.get(path) : undefined;
			if (file) response.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length }).end(file.bytes);
			else if (answer) response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(origin)));
			else response.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }));
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		baseUrl: `${origin}/v1`,
		origin,
		requests,
		answerGenerations: (answer) => answers.set('/v1/images/generations', answer),
		answerUploads: (answer) => answers.set('/v1/uploads', answer),
		host(path, bytes, contentType) {
			hosted.set(path, { bytes, contentType });
			return `${origin}${path}`;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
