/**
 * GET /v1/files/<id> (what a hosted file is) and DELETE /v1/files/<id> (take it offline now, on every
 * replica, and remove its bytes). Only the API key that stored the file, by upload or generation,
 * may do either; for any other key the file does not exist (404), so ids cannot be probed
 * (storage/owned-files.ts, shared with the MCP tools).
 */
import type { FastifyInstance } from 'fastify';
import type { FileInfoResponse } from '../../../core/api';
import { deleteOwnedFile, describeFile, ownedFile } from '../storage/owned-files';

export default async function fileInfoRoutes(v1: FastifyInstance): Promise<void> {
	const files = v1.hostedFiles;

	v1.get<{ Params: { id: string } }>('/files/:id', async (request): Promise<FileInfoResponse> => {
		return describeFile(files, await ownedFile(files, request.params.id, request.apiKeyId));
	});

	v1.delete<{ Params: { id: string } }>('/files/:id', async (request, reply) => {
		await deleteOwnedFile(files, v1.idempotencyStore, request.params.id, request.apiKeyId);
		return reply.status(204).send();
	});
}
