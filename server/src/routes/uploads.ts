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
import { uploadResponseSchema } from '../../../core/api';
import { ImageGenError } from '../../../core/errors';
import { uploadOptionsJsonSchema, type JsonSchema } from '../schema-docs/json-schema';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, EXAMPLE_PNG_DATA_URI, IDEMPOTENCY_KEY_HEADER, type BodyExamples, type ZodTypeProvider } from '../schema-docs/route-schemas';
import { fingerprintJson } from '../idempotency/idempotency';
import { answerMultipartUpload, type MultipartUploadServices } from '../uploads/multipart';
import { clientGoneSignal } from '../http/client-gone';

const ROUTE = '/v1/uploads';

/** The bodies document only: uploads/ parses both forms itself (a multipart file is streamed, never buffered for a validator). */
function uploadSchema(retentionSeconds: number) {
	const options = uploadOptionsJsonSchema(retentionSeconds);
	const mediaInput = { type: 'string', minLength: 1, description: 'An http(s) URL, a data URI or raw base64' };
	const json: JsonSchema = {
		type: 'object',
		description: "Exactly one of 'file' (the bytes decide image or video), 'image' or 'video'.",
		properties: { file: mediaInput, image: mediaInput, video: mediaInput, ...options },
		additionalProperties: false,
	};
	const form: JsonSchema = { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' }, ...options } };
	return {
		tags: ['Files'],
		operationId: 'uploadFile',
		summary: 'Host an image or video for a limited time, optionally converted or fitted',
		...API_KEY_AUTH,
		headers: IDEMPOTENCY_KEY_HEADER,
		body: { content: { 'application/json': { schema: json }, 'multipart/form-data': { schema: form } } },
		bodyExamples: {
			image: { summary: 'An image given inline, hosted as WebP', value: { image: EXAMPLE_PNG_DATA_URI, output_format: 'webp' } },
			fitted: {
				summary: 'An image scaled down to at most 512 px a side, online for an hour',
				// An hour only where the retention allows one: an example this service would refuse helps nobody.
				value: { file: EXAMPLE_PNG_DATA_URI, max_side: 512, ...(retentionSeconds >= 3600 ? { expires_in: 3600 } : {}) },
			},
		} satisfies BodyExamples,
		response: {
			200: uploadResponseSchema,
			...errorResponses([400, 'A field is wrong (param names it)'], ...AUTH_ERRORS, [409, 'Idempotency-Key conflict'], [413, 'Larger than the upload limit'], [415, 'Not a supported image or video'], [507, 'Storage full']),
		},
	};
}

export default async function uploadRoutes(v1: FastifyInstance): Promise<void> {
	const { maxUploadBytes, retentionSeconds } = v1.config;
	const multipart: MultipartUploadServices = { route: ROUTE, store: v1.hostedFiles, uploads: v1.uploads, idempotency: v1.idempotency, maxUploadBytes, retentionSeconds };

	v1.withTypeProvider<ZodTypeProvider>().post('/uploads', { schema: uploadSchema(retentionSeconds) }, async (request, reply) => {
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
