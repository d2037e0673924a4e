/**
 * GET /v1/files/<id> (what a hosted file is) and DELETE /v1/files/<id> (take it offline now, on every
 * replica, and remove its bytes). Only the API key that stored the file, by upload or generation,
 * may do either; for any other key the file does not exist (404), so ids cannot be probed.
 */
import type { FastifyInstance } from 'fastify';
import type { FileInfoResponse } from '../../../core/api';
import { ImageGenError } from '../../../core/errors';

const ID = /^[A-Za-z0-9_-]{16,64}$/;

const notFound = (id: string) =>
	new ImageGenError(404, `No file '${id}' of this API key: it never existed, has expired or was deleted`, {
		param: 'id',
		code: 'file_not_found',
	});

export default async function fileInfoRoutes(v1: FastifyInstance): Promise<void> {
	const files = v1.hostedFiles;

	v1.get<{ Params: { id: string } }>('/files/:id', async (request): Promise<FileInfoResponse> => {
		const { id } = request.params;
		const file = ID.test(id) ? await files.info(id, request.apiKeyId) : null;
		if (!file) throw notFound(id);
		return {
			id: file.id,
			url: files.publicUrl(file),
			mimeType: file.mimeType,
			sizeBytes: file.size,
			createdAt: file.createdAt.toISOString(),
			expiresAt: file.expiresAt.toISOString(),
		};
	});

	v1.delete<{ Params: { id: string } }>('/files/:id', async (request, reply) => {
		const { id } = request.params;
		if (!ID.test(id)) throw notFound(id);
		// Before the bytes go: a repeat of the request that made the file then runs again rather
		// than replaying a URL that is about to be 404 (also if the delete itself fails half-way).
		await v1.idempotencyStore.forgetFile(request.apiKeyId, id);
		if (!(await files.remove(id, request.apiKeyId))) throw notFound(id);
		return reply.status(204).send();
	});
}
