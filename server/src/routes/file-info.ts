/**
 * GET /v1/files/<id> (what a hosted file is) and DELETE /v1/files/<id> (take it offline now, on every
 * replica, and remove its bytes). Only the API key that stored the file, by upload or generation,
 * may do either; for any other key the file does not exist (404), so ids cannot be probed
 * (storage/owned-files.ts, shared with the MCP tools).
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod/v3';
import { fileInfoResponseSchema } from '../../../core/api';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, noBody, type ZodTypeProvider } from '../schema-docs/route-schemas';
import { deleteOwnedFile, describeFile, ownedFile } from '../storage/owned-files';

/** Documents the id only: an id of the wrong form is a file that does not exist (404), as today. */
const params = z.object({ id: z.string().describe('File id (the last part of its URL, without extension)') });
const notFound: Array<[number, string]> = [[404, 'No such file of this key']];

export default async function fileInfoRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	const files = v1.hostedFiles;

	const describe = { tags: ['Files'], operationId: 'getFile', summary: 'What a file of this key is', ...API_KEY_AUTH, params, response: { 200: fileInfoResponseSchema, ...errorResponses(...AUTH_ERRORS, ...notFound) } };
	v1.get('/files/:id', { schema: describe }, async (request) => {
		return describeFile(files, await ownedFile(files, request.params.id, request.apiKeyId));
	});

	const remove = { tags: ['Files'], operationId: 'deleteFile', summary: 'Take a file of this key offline now', ...API_KEY_AUTH, params, response: { 204: noBody('Deleted'), ...errorResponses(...AUTH_ERRORS, ...notFound) } };
	v1.delete('/files/:id', { schema: remove }, async (request, reply) => {
		await deleteOwnedFile(files, v1.idempotencyStore, request.params.id, request.apiKeyId);
		return reply.status(204).send();
	});
}
