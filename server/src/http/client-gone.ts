/**
 * An AbortSignal that fires when the client goes away before its answer was sent, so providers,
 * image work and downloads stop working for nobody.
 */
import type { FastifyReply } from 'fastify';

export function clientGoneSignal(reply: FastifyReply): AbortSignal {
	const client = new AbortController();
	reply.raw.once('close', () => {
		if (!reply.raw.writableFinished) client.abort(new Error('client closed the connection'));
	});
	return client.signal;
}
