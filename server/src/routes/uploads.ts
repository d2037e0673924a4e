/**
 * POST /v1/uploads: a multipart `file` (streamed into storage) or JSON `file` / `image` / `video` (URL
 * fetched through the SSRF-checked fetcher and streamed into storage, or data URI / base64
 * decoded). The bytes decide what the file is; `output_format` converts images with sharp and
 * `max_side` / `max_bytes` fit them (media/fit-image.ts), otherwise the stored bytes are exactly
 * the bytes received. `expires_in` shortens the file's lifetime. With an `Idempotency-Key` a
 * repeat replays the first answer. The route only dispatches: a multipart form is received by
 * uploads/multipart.ts, and storing the file is `fastify.uploads` (uploads/uploads.ts), which the
 * MCP tool `upload_file` shares.
 */
import type { FastifyInstance } from 'fastify';
import { ImageGenError } from '../../../core/errors';
import { fingerprintJson } from '../idempotency/idempotency';
import { answerMultipartUpload, type MultipartUploadServices } from '../uploads/multipart';
import { clientGoneSignal } from '../http/client-gone';

const ROUTE = '/v1/uploads';

export default async function uploadRoutes(v1: FastifyInstance): Promise<void> {
	const { maxUploadBytes, retentionSeconds } = v1.config;
	const multipart: MultipartUploadServices = { route: ROUTE, store: v1.hostedFiles, uploads: v1.uploads, idempotency: v1.idempotency, maxUploadBytes, retentionSeconds };

	v1.post('/uploads', async (request, reply) => {
		try {
			const key = v1.idempotency.keyOf(request);
			if (request.isMultipart()) return v1.idempotency.reply(reply, await answerMultipartUpload(request, reply, key, multipart));
			const clientGone = clientGoneSignal(reply);
			return await v1.idempotency.send(request, reply, {
				key,
				fingerprint: () => fingerprintJson(request.method, ROUTE, request.body),
				run: () => v1.uploads.fromJson(request.body, request.apiKeyId, clientGone),
			});
		} catch (error) {
			v1.metrics.upload({ kind: v1.uploads.failedKind(error) ?? 'unknown', outcome: error instanceof ImageGenError ? error.code : 'internal_error', bytes: 0 });
			throw error;
		}
	});
}
