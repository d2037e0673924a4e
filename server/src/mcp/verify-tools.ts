/** The MCP tool that checks an image for its provenance marks, as POST /v1/provenance/verify does. */
import type { FastifyInstance } from 'fastify';
import { invalidField } from '../../../core/errors';
import type { ToolDefinition } from './tool-definition';
import { VERIFY_IMAGE_INPUT_SCHEMA } from './tool-schemas';

export function verifyImageTool(service: FastifyInstance): ToolDefinition {
	return {
		name: 'verify_image',
		title: 'Check an image for provenance marks',
		description:
			'Checks an image for its C2PA manifest (present, valid, signer, digital source type) and its invisible watermark (found, algorithm, payload). When the watermark names a generation this API key made, answers its id, model and creation time; otherwise generation is null. Nothing is stored.',
		inputSchema: VERIFY_IMAGE_INPUT_SCHEMA,
		annotations: { readOnlyHint: true, openWorldHint: true },
		async run(args, caller) {
			for (const key of Object.keys(args)) {
				if (key !== 'image') throw invalidField(key, `Unknown argument '${key}': give only 'image'`, 'unknown_field');
			}
			return service.imageVerifier.verifyInput(args.image, 'image', { apiKeyId: caller.apiKeyId }, caller.clientGone);
		},
	};
}
