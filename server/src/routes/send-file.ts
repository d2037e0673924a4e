/**
 * A hosted file as an answer: `proxy` delivery streams the bytes with validators and ranges;
 * `redirect` answers a 302 to a presigned URL of the bucket that stops working no later than the
 * file expires. Headers (noindex, CORS, a cache lifetime that never reaches past the expiry) are
 * storage/cache-headers.ts. Shared by the public file route and a video's content.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import { hostedFileHeaders, missingFileHeaders } from '../storage/cache-headers';
import type { FileRecord } from '../storage/hosted-files';
import type { ByteRange } from '../storage/object-storage';

export const notFound = () => new ImageGenError(404, 'File not found: it never existed, has expired or was deleted', { code: 'file_not_found' });

export async function sendHostedFile(app: FastifyInstance, file: FileRecord, request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
	const files = app.hostedFiles;
	if (app.config.fileDelivery === 'redirect') {
		const location = await files.presign(file);
		if (location === null) throw new Error(`the ${files.storage.engine} storage cannot presign URLs`);
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
