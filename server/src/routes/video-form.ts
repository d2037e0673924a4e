/**
 * The multipart form of POST /v1/videos, as the official SDKs send it: every field a text part,
 * `input_reference` (or `image`, `last_frame_image`, `audio`) a file part, and an
 * `input_reference: { image_url }` flattened to a part named `input_reference[image_url]`. A file
 * part becomes a data URI, bounded in bytes like an input given as base64 in JSON: the same checks
 * then apply to both forms.
 */
import type { FastifyRequest } from 'fastify';
import { invalidField } from '../../../core/errors';
import { formatBytes } from '../../../core/units';

const FILE_FIELDS = new Set(['input_reference', 'image', 'last_frame_image', 'audio']);
/** Text fields a video request has at most, and how long one may be (a prompt, a data URI). */
const MAX_FIELDS = 24;
const MAX_FIELD_BYTES = 1024 * 1024;
/** `input_reference[image_url]` is the form's spelling of `{ input_reference: { image_url } }`. */
const NESTED = /^([a-z_]+)\[([a-z_]+)\]$/;

export async function readVideoForm(request: FastifyRequest, maxFileBytes: number): Promise<Record<string, unknown>> {
	const body: Record<string, unknown> = {};
	const parts = request.parts({ limits: { fields: MAX_FIELDS, files: FILE_FIELDS.size, parts: MAX_FIELDS + FILE_FIELDS.size, fieldSize: MAX_FIELD_BYTES, fileSize: maxFileBytes + 1 } });
	for await (const part of parts) {
		if (part.type === 'file') {
			if (!FILE_FIELDS.has(part.fieldname)) {
				part.file.resume();
				throw invalidField(part.fieldname, `'${part.fieldname}' is not a file field of a video request (files: ${[...FILE_FIELDS].join(', ')})`, 'unknown_field');
			}
			const bytes = await part.toBuffer().catch(() => {
				throw invalidField(part.fieldname, `'${part.fieldname}' is larger than the ${formatBytes(maxFileBytes)} allowed for an input`, 'too_large');
			});
			if (bytes.length > maxFileBytes) throw invalidField(part.fieldname, `'${part.fieldname}' is larger than the ${formatBytes(maxFileBytes)} allowed for an input`, 'too_large');
			body[part.fieldname] = `data:${part.mimetype || 'application/octet-stream'};base64,${bytes.toString('base64')}`;
			continue;
		}
		if (part.fieldnameTruncated || part.valueTruncated) throw invalidField(part.fieldname, `'${part.fieldname}' is longer than ${formatBytes(MAX_FIELD_BYTES)}`, 'too_long');
		const nested = NESTED.exec(part.fieldname);
		if (nested) {
			const [, outer, inner] = nested as unknown as [string, string, string];
			const object = (typeof body[outer] === 'object' && body[outer] !== null ? body[outer] : (body[outer] = {})) as Record<string, unknown>;
			object[inner] = part.value;
		} else {
			body[part.fieldname] = part.value;
		}
	}
	return body;
}
