/**
 * POST /v1/provenance/verify: what an image carries — its C2PA manifest (present, valid, signer,
 * digital source type), the watermark in its pixels (found, algorithm, payload) and the generation
 * that watermark names, for a record this service keeps and only to the key that made it. The
 * image comes as uploads take it: a multipart `file`, or JSON `image` (an http(s) URL fetched
 * under the address check, a data URI or base64). It is checked and forgotten: nothing is stored.
 * The checking is `fastify.imageVerifier` (provenance/image-verifier.ts), which the MCP tool
 * `verify_image` shares.
 */
import type { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ImageGenError, invalidField } from '../../../core/errors';
import { clientGoneSignal } from '../http/client-gone';
import type { ImageVerifier } from '../provenance/image-verifier';
import { verifyAnswerSchema } from '../provenance/verify-image';
import type { JsonSchema } from '../schema-docs/json-schema';
import { API_KEY_AUTH, AUTH_ERRORS, errorResponses, EXAMPLE_PNG_DATA_URI, type BodyExamples, type ZodTypeProvider } from '../schema-docs/route-schemas';

/** The bodies document only: the handler reads both forms itself (a multipart file is counted as it arrives, never left to a validator). */
const schema = {
	tags: ['Files'],
	operationId: 'verifyImage',
	summary: 'Check an image for its C2PA manifest and watermark, and the generation they name',
	...API_KEY_AUTH,
	body: {
		content: {
			'application/json': {
				schema: {
					type: 'object',
					required: ['image'],
					properties: { image: { type: 'string', minLength: 1, description: 'An http(s) URL, a data URI or raw base64' } },
					additionalProperties: false,
				} satisfies JsonSchema,
			},
			'multipart/form-data': { schema: { type: 'object', required: ['file'], properties: { file: { type: 'string', format: 'binary' } } } satisfies JsonSchema },
		},
	},
	bodyExamples: {
		inline: { summary: 'An image given inline', value: { image: EXAMPLE_PNG_DATA_URI } },
	} satisfies BodyExamples,
	response: {
		200: verifyAnswerSchema,
		...errorResponses(
			[400, 'Not an image, or a field is wrong (param names it)'],
			...AUTH_ERRORS,
			[413, 'Larger than the upload limit'],
			[503, 'Too many images are being checked; see Retry-After'],
		),
	},
};

export default async function provenanceRoutes(scope: FastifyInstance): Promise<void> {
	const v1 = scope.withTypeProvider<ZodTypeProvider>();
	const verifier = v1.imageVerifier;
	v1.post('/provenance/verify', { schema }, async (request, reply) => {
		const caller = { apiKeyId: request.apiKeyId };
		const clientGone = clientGoneSignal(reply);
		if (request.isMultipart()) {
			return verifier.inTurn(async (signal) => verifier.verifyBytes(await receiveFile(request, verifier), 'file', caller, signal), clientGone);
		}
		return verifier.verifyInput(jsonImage(request.body), 'image', caller, clientGone);
	});
}

/** `image` of a JSON body that holds nothing else. */
function jsonImage(body: unknown): unknown {
	if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
		throw invalidField('image', "Send a multipart form with the part 'file', or a JSON object with 'image' (Content-Type: application/json)", 'missing_body');
	}
	for (const key of Object.keys(body)) {
		if (key !== 'image') throw invalidField(key, `Unknown field '${key}': send only 'image'`, 'unknown_field');
	}
	return (body as { image?: unknown }).image;
}

/** The form's one part, `file`, read whole within the verifier's limit; any other part is refused by name. */
async function receiveFile(request: FastifyRequest, verifier: ImageVerifier): Promise<Buffer> {
	let file: Buffer | undefined;
	try {
		for await (const part of request.parts()) {
			if (part.type !== 'file') throw invalidField(part.fieldname, `Unknown field '${part.fieldname}': send only the part 'file'`, 'unknown_field');
			if (part.fieldname !== 'file' || file !== undefined) {
				part.file.resume();
				throw invalidField(part.fieldname, `Unknown file part '${part.fieldname}': send the image in one part 'file'`, 'unknown_field');
			}
			file = await readWithin(part.file, verifier.maxBytes);
			if (file === undefined) throw verifier.tooLarge('file');
		}
	} catch (error) {
		throw multipartError(error);
	}
	if (!file) throw invalidField('file', "The multipart form has no part 'file' holding the image", 'missing_field');
	return file;
}

/** The whole stream, or undefined once it is longer than `maxBytes` (the rest is read and dropped, so the answer can be sent). */
async function readWithin(stream: Readable, maxBytes: number): Promise<Buffer | undefined> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of stream as AsyncIterable<Buffer>) {
		size += chunk.length;
		if (size <= maxBytes) chunks.push(chunk);
		else chunks.length = 0;
	}
	return size <= maxBytes ? Buffer.concat(chunks) : undefined;
}

/** The multipart parser reports broken bodies as plain errors; they are the caller's. */
function multipartError(error: unknown): unknown {
	if (error instanceof ImageGenError) return error;
	const { code, statusCode } = error as { code?: string; statusCode?: number };
	if (code?.startsWith('FST_') || statusCode !== undefined) return error;
	return new ImageGenError(400, `The multipart body is malformed: ${(error as Error)?.message ?? 'unreadable'}`, { code: 'invalid_multipart' });
}
