/**
 * Public hosted files: GET/HEAD /files/<id>.<ext>. No auth: the unguessable id is the capability,
 * and n8n or a browser must be able to fetch it. `proxy` delivery streams the bytes with
 * validators and ranges; `redirect` answers a 302 to a presigned URL of the bucket that stops
 * working no later than the file expires. Headers (noindex, CORS, a cache lifetime that never
 * reaches past the expiry) are storage/cache-headers.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import { hostedFileHeaders, missingFileHeaders } from '../storage/cache-headers';
import type { ByteRange } from '../storage/object-storage';
import { errorResponses, noBody } from '../schema-docs/route-schemas';

const download = {
	tags: ['Files'],
	operationId: 'downloadFile',
	summary: 'A hosted file (public, no auth); supports Range, ETag and If-None-Match',
	params: { type: 'object', properties: { name: { type: 'string', description: 'id.ext as in the URL' } }, required: ['name'] },
	response: {
		200: { description: 'The bytes', content: { 'image/*': { schema: { type: 'string', format: 'binary' } }, 'video/*': { schema: { type: 'string', format: 'binary' } } } },
		206: { description: 'A byte range', content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } } },
		302: noBody('Redirect to object storage (S3 with presigned downloads)'),
		304: noBody('Not modified'),
		...errorResponses([404, 'Unknown, expired or deleted'], [416, 'Range not satisfiable']),
	},
};
const headers = { ...download, operationId: 'fileHeaders', summary: 'The headers a download would have, without the bytes' };

const notFound = () => new ImageGenError(404, 'File not found: it never existed, has expired or was deleted', { code: 'file_not_found' });

export default async function fileRoutes(app: FastifyInstance): Promise<void> {
	const files = app.hostedFiles;
	const redirect = app.config.fileDelivery === 'redirect';

	const handler = async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
		const file = await files.get(request.params.name);
		if (!file) {
			reply.headers(missingFileHeaders());
			throw notFound();
		}

		if (redirect) {
			const location = await files.presign(file);
			if (location === null) throw new Error(`the ${files.storage.engine} storage cannot presign URLs`);
			// The link itself expires, and a cached redirect would outlive a delete.
			return reply.status(302).headers(missingFileHeaders()).header('location', location).send();
		}

		reply.headers(hostedFileHeaders(file));
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
		if (!bytes) {
			// Deleted or swept between the lookup and the read.
			for (const name of [...Object.keys(hostedFileHeaders(file)), 'content-length', 'content-range']) reply.removeHeader(name);
			reply.headers(missingFileHeaders());
			throw notFound();
		}
		return reply.send(bytes);
	};
	app.get('/files/:name', { exposeHeadRoute: false, schema: download }, handler);
	app.head('/files/:name', { schema: headers }, handler);
}

function matchesEtag(header: string | undefined, etag: string): boolean {
	if (!header) return false;
	return header.split(',').some((candidate) => {
		const tag = candidate.trim();
		return tag === '*' || tag === etag || tag === `W/${etag}`;
	});
}

/**
 * A single-range `Range: bytes=…` header (RFC 9110 §14). Multiple ranges are answered with the
 * whole file, which the RFC allows and no media player needs otherwise. null → ignore the header
 * (serve everything); 'unsatisfiable' → 416.
 */
function parseRange(header: string, size: number): ByteRange | 'unsatisfiable' | null {
	const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
	if (!match) return null;
	const [, first, last] = match as unknown as [string, string, string];
	if (first === '' && last === '') return null;
	if (first === '') {
		const suffix = Number(last);
		if (suffix === 0 || size === 0) return 'unsatisfiable';
		return { start: Math.max(0, size - suffix), end: size - 1 };
	}
	const start = Number(first);
	if (start >= size) return 'unsatisfiable';
	const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
	if (end < start) return null;
	return { start, end };
}
