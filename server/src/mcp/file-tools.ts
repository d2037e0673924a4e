/** The MCP tools on hosted files: upload one, describe one, delete one (only the caller's own). */
import type { FastifyInstance } from 'fastify';
import { deleteOwnedFile, ownedFile } from '../storage/owned-files';
import { idArgument, type ToolDefinition } from './tool-definition';
import { FILE_ID_INPUT_SCHEMA, uploadFileInputSchema } from './tool-schemas';

export function uploadFileTool(service: FastifyInstance): ToolDefinition {
	const { config } = service;
	return {
		name: 'upload_file',
		title: 'Host an image or video',
		description:
			'Stores an image or video at a public URL for a limited time, optionally converted (output_format) or scaled down (max_side, max_bytes). Answers its id, URL, media type, MIME type, size and expiry. Use the URL as an input image of generate_image.',
		inputSchema: uploadFileInputSchema(config.retentionSeconds),
		annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
		async run(args, caller) {
			const stored = await service.uploads.fromJson(args, caller.apiKeyId);
			const isVideo = 'videoUrl' in stored;
			return {
				id: stored.id,
				url: isVideo ? stored.videoUrl : stored.imageUrl,
				media_type: isVideo ? 'video' : 'image',
				mime_type: stored.mimeType,
				size_bytes: stored.sizeBytes,
				expires_at: stored.expiresAt,
			};
		},
	};
}

export function getFileTool(service: FastifyInstance): ToolDefinition {
	return {
		name: 'get_file',
		title: 'Describe a hosted file',
		description: 'Answers the URL, media type, MIME type, size and expiry of a file this API key stored (by upload or generation).',
		inputSchema: FILE_ID_INPUT_SCHEMA,
		annotations: { readOnlyHint: true, openWorldHint: false },
		async run(args, caller) {
			const file = await ownedFile(service.hostedFiles, idArgument(args), caller.apiKeyId);
			return {
				id: file.id,
				url: service.hostedFiles.publicUrl(file),
				media_type: file.kind,
				mime_type: file.mimeType,
				size_bytes: file.size,
				expires_at: file.expiresAt.toISOString(),
			};
		},
	};
}

export function deleteFileTool(service: FastifyInstance): ToolDefinition {
	return {
		name: 'delete_file',
		title: 'Delete a hosted file',
		description: 'Takes a file this API key stored offline at once and removes its bytes.',
		inputSchema: FILE_ID_INPUT_SCHEMA,
		annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
		async run(args, caller) {
			const id = idArgument(args);
			await deleteOwnedFile(service.hostedFiles, service.idempotencyStore, id, caller.apiKeyId);
			return { id, deleted: true };
		},
	};
}
