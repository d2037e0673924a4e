/**
 * A host on loopback whose errors are huge: every request is answered with the status the test
 * sets and a body of megabytes (a JSON error whose message is one long string, or an HTML page, as
 * a proxy or a crashing server may send), written a piece at a time. It records how much of each
 * body it got to write before the client closed the connection, and whether it wrote it whole, so
 * a test can tell a client that read a prefix and hung up from one that buffered everything.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type OversizedBody = 'json' | 'html';

export interface OversizedAnswer {
	path: string;
	/** Bytes of the body written before the client went away (or all of them). */
	written: number;
	/** The whole body was written and the answer ended. */
	completed: boolean;
}

export interface OversizedErrorHost {
	origin: string;
	answers: OversizedAnswer[];
	/** The status and the body the next requests get (500 and JSON until told). */
	answerWith(status: number, body: OversizedBody): void;
	/** Resolves once every answer begun has ended or been cut off. */
	settled(): Promise<void>;
	close(): Promise<void>;
}

/** The body's size: five megabytes, far beyond any error text a client should keep. */
export const OVERSIZED_BYTES = 5_000_000;
const PIECE_BYTES = 64 * 1024;

function oversizedBody(kind: OversizedBody): Buffer {
	if (kind === 'json') return Buffer.from(JSON.stringify({ error: { message: 'x'.repeat(OVERSIZED_BYTES) } }));
	const filler = '<p>An error occurred while processing your request.</p>\n'.repeat(OVERSIZED_BYTES / 57);
	return Buffer.from(`<!DOCTYPE html><html><head><title>500 Internal Server Error</title></head><body>${filler}</body></html>`);
}

export async function startOversizedErrorHost(): Promise<OversizedErrorHost> {
	const answers: OversizedAnswer[] = [];
	const pending = new Set<Promise<void>>();
	let status = 500;
	let kind: OversizedBody = 'json';
	const server: Server = createServer((request, response) => {
		request.resume();
		const body = oversizedBody(kind);
		const answer: OversizedAnswer = { path: request.url ?? '', written: 0, completed: false };
		answers.push(answer);
		response.writeHead(status, { 'content-type': kind === 'json' ? 'application/json' : 'text/html', 'content-length': body.length });
		// One piece per turn of the event loop: a client that stops reading and closes is noticed
		// long before the body could have gone out whole.
		const done = new Promise<void>((resolve) => {
			response.once('close', () => resolve());
			const next = () => {
				if (response.destroyed) return;
				if (answer.written >= body.length) {
					response.end(() => (answer.completed = true));
					return;
				}
				const piece = body.subarray(answer.written, answer.written + PIECE_BYTES);
				answer.written += piece.length;
				if (response.write(piece)) setTimeout(next, 1);
				else response.once('drain', () => setTimeout(next, 1));
			};
			next();
		});
		pending.add(done);
		void done.then(() => pending.delete(done));
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	return {
		origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
		answers,
		answerWith(nextStatus, nextKind) {
			status = nextStatus;
			kind = nextKind;
		},
		settled: async () => {
			await Promise.all([...pending]);
		},
		close: () =>
			new Promise((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
