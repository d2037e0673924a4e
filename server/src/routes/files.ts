/**
 * Public hosted files: GET/HEAD /files/<id>.<ext>. No auth: the unguessable id is the capability,
 * and n8n or a browser must be able to fetch it. `proxy` delivery streams the bytes with
 * validators and ranges; `redirect` answers a 302 to a presigned URL of the bucket that stops
 * working no later than the file expires. Headers (noindex, CORS, a cache lifetime that never
 * reaches past the expiry) are storage/cache-headers.ts.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { missingFileHeaders } from '../storage/cache-headers';
import { notFound, sendHostedFile } from './send-file';
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

export default async function fileRoutes(app: FastifyInstance): Promise<void> {
	const handler = async (request: FastifyRequest<{ Params: { name: string } }>, reply: FastifyReply) => {
		const file = await app.hostedFiles.get(request.params.name);
		if (!file) {
			reply.headers(missingFileHeaders());
			throw notFound();
		}
		return sendHostedFile(app, file, request, reply);
	};
	app.get('/files/:name', { exposeHeadRoute: false, schema: download }, handler);
	app.head('/files/:name', { schema: headers }, handler);
}
