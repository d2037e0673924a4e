/**
 * Public hosted files: GET/HEAD /files/<id>.<ext>. No auth: the unguessable id is the capability,
 * and n8n or a browser must be able to fetch it. `proxy` delivery streams the bytes with
 * validators and ranges; `redirect` answers a 302 to a presigned URL of the bucket that stops
 * working no later than the file expires.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import type { FileRecord } from '../storage/hosted-files';
import { parseRange } from './range';

const notFound = () => new ImageGenError(404, 'File not found: it never existed or has expired', { code: 'file_not_found' });

export default async function fileRoutes(app: FastifyInstance): Promise<void> {
	const files = app.hostedFiles;
	const redirect = app.config.fileDelivery === 'redirect';

	app.route({
		method: ['GET', 'HEAD'],
		url: '/files/:name',
		exposeHeadRoute: false,
		handler: async (request: FastifyRequest<{ Params: { name: string } }>, reply) => {
			const file = await files.get(request.params.name);
			if (!file) throw notFound();

			if (redirect) {
				const location = await files.presign(file);
				if (location === null) throw new Error(`the ${files.storage.driver} storage cannot presign URLs`);
				// The link itself expires; a cached redirect would outlive it.
				return reply.status(302).header('location', location).header('cache-control', 'no-store').send();
			}

			setCommonHeaders(reply, file);
			if (matchesEtag(request.headers['if-none-match'], file.etag)) return reply.status(304).send();

			let start = 0;
			let end = file.size - 1;
			let ranged = false;
			const rangeHeader = request.headers.range;
			const ifRange = request.headers['if-range'];
			if (rangeHeader !== undefined && (ifRange === undefined || ifRange === file.etag)) {
				const range = parseRange(rangeHeader, file.size);
				if (range === 'unsatisfiable') {
					const error = new ImageGenError(400, `Range '${rangeHeader}' is outside the file (${file.size} bytes)`, {
						param: 'range',
						code: 'range_not_satisfiable',
					});
					return reply
						.status(416)
						.header('content-range', `bytes */${file.size}`)
						.type('application/json; charset=utf-8')
						.send(error.toBody());
				}
				if (range) {
					({ start, end } = range);
					ranged = true;
					reply.status(206).header('content-range', `bytes ${start}-${end}/${file.size}`);
				}
			}
			reply.header('content-length', String(end - start + 1));
			if (request.method === 'HEAD') return reply.send();

			if (file.size === 0) return reply.send('');
			const bytes = await files.open(file, ranged ? { start, end } : undefined);
			if (!bytes) throw notFound();
			return reply.send(bytes);
		},
	});
}

function setCommonHeaders(reply: FastifyReply, file: FileRecord): void {
	const secondsLeft = Math.max(0, Math.floor((file.expiresAt.getTime() - Date.now()) / 1000));
	reply
		.header('content-type', file.mimeType)
		.header('etag', file.etag)
		.header('last-modified', file.createdAt.toUTCString())
		.header('expires', file.expiresAt.toUTCString())
		// Caches must not keep a file beyond its expiry; it never changes before then.
		.header('cache-control', `public, max-age=${secondsLeft}, immutable`)
		.header('accept-ranges', 'bytes')
		.header('x-content-type-options', 'nosniff')
		.header('content-disposition', `inline; filename="${file.name}"`);
}

function matchesEtag(header: string | undefined, etag: string): boolean {
	if (!header) return false;
	return header.split(',').some((candidate) => {
		const tag = candidate.trim();
		return tag === '*' || tag === etag || tag === `W/${etag}`;
	});
}
