/**
 * The connection level, below routing: HTTP that Node's parser refuses, `Expect` headers other than
 * 100-continue, clients that stall, and bodies left unread by a refusal. Each is answered in the
 * API's error shape where HTTP still allows an answer, and no connection is left waiting for bytes
 * nobody will read.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { ImageGenError } from '../../../core/errors';

/** A refused request whose unread body is at most this large is read and dropped, keeping the connection. */
const DRAIN_LIMIT_BYTES = 1024 * 1024;

/** Fastify's `clientErrorHandler`: the parser refused the bytes, so answer on the socket itself and close it. */
export function answerClientError(error: Error & { code?: string }, socket: Socket): void {
	if (error.code === 'ECONNRESET' || socket.destroyed) return;
	let answer: ImageGenError;
	if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
		answer = new ImageGenError(408, 'The request did not arrive in time', { code: 'request_timeout' });
	} else if (error.code === 'HPE_HEADER_OVERFLOW') {
		answer = new ImageGenError(431, 'The request headers are too large', { code: 'headers_too_large' });
	} else {
		answer = new ImageGenError(400, `The request is not valid HTTP${error.code ? ` (${error.code})` : ''}`, { code: 'malformed_http' });
	}
	writeAndClose(socket, answer);
}

export function installConnectionHandling(app: FastifyInstance): void {
	const inFlight = new WeakMap<Socket, { request: IncomingMessage; response: ServerResponse }>();

	// Node answers a bare 417 when nobody listens for this.
	app.server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) => {
		const answer = new ImageGenError(417, "Only 'Expect: 100-continue' is supported", { param: 'Expect', code: 'expectation_failed' });
		const body = JSON.stringify(answer.toBody());
		response.writeHead(answer.status, {
			'content-type': 'application/json; charset=utf-8',
			'content-length': Buffer.byteLength(body),
			connection: 'close',
		});
		response.end(body);
	});

	// The socket's idle timer (connectionTimeout) counts only while we wait for the client: once its
	// request has fully arrived, silence is the server working (a generation takes minutes), unless
	// the answer is waiting in the socket for the client to read it: a client that stopped reading
	// would hold the connection, and a shutdown, for ever.
	app.server.on('timeout', (socket: Socket) => {
		const current = inFlight.get(socket);
		const waitingForTheReader = current?.response.headersSent === true && socket.writableLength > 0;
		if (current?.request.complete && !waitingForTheReader) return;
		if (current && !current.response.headersSent) {
			writeAndClose(socket, new ImageGenError(408, 'The client sent nothing for too long; the request was dropped', { code: 'request_timeout' }));
		} else {
			socket.destroy();
		}
	});

	app.addHook('onRequest', async (request, reply) => {
		inFlight.set(request.raw.socket, { request: request.raw, response: reply.raw });
	});
	app.addHook('onResponse', async (request) => {
		inFlight.delete(request.raw.socket);
	});

	// A request refused before its body was read (a multipart form with an unknown first field stops
	// its parser mid-body): a small rest is read and dropped so the connection serves the next request;
	// a larger one ends the connection after the answer instead.
	app.addHook('onSend', async (request, reply) => {
		const raw = request.raw;
		if (raw.complete || raw.readableEnded) return;
		const declared = Number(raw.headers['content-length']);
		if (!(Number.isFinite(declared) && declared - raw.socket.bytesRead <= DRAIN_LIMIT_BYTES)) reply.header('connection', 'close');
		raw.unpipe();
		raw.on('error', () => undefined);
		raw.resume();
	});
}

function writeAndClose(socket: Socket, answer: ImageGenError): void {
	const body = JSON.stringify(answer.toBody());
	if (socket.writable) {
		socket.write(
			`HTTP/1.1 ${answer.status} ${answer.type === 'invalid_request_error' ? 'Client Error' : 'Error'}\r\n` +
				`Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
		);
	}
	socket.destroySoon();
}
