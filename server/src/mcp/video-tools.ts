/**
 * The MCP tool that makes a video: it answers the job at once (a video takes minutes, longer than
 * an agent's tool call should wait), which `get_generation` follows and `cancel_generation` stops.
 */
import type { FastifyInstance } from 'fastify';
import type { CatalogModelId } from '../../../core/video-models';
import { VIDEO_MODEL_IDS, VIDEO_MODELS, videoPricePerSecond, type VideoModelId } from '../../../core/video-models';
import { parseVideoRequest } from '../../../core/video-schemas';
import { videoObject } from '../jobs/video-object';
import type { JsonSchema } from '../schema-docs/json-schema';
import type { ToolDefinition } from './tool-definition';

function generateVideoInputSchema(models: readonly VideoModelId[], prices: Partial<Record<CatalogModelId, number>>): JsonSchema {
	const spec = VIDEO_MODELS[models[0] ?? VIDEO_MODEL_IDS[0]];
	const price = (id: VideoModelId) => videoPricePerSecond(VIDEO_MODELS[id], '720p', false, prices[id]);
	return {
		type: 'object',
		properties: {
			model: { type: 'string', enum: [...models], description: models.map((id) => `${id}: ${VIDEO_MODELS[id].description} (${price(id)} USD per second at 720p)`).join('; ') },
			prompt: { type: 'string', maxLength: spec.promptMaxLength, description: 'What the video shows' },
			seconds: { type: 'integer', minimum: spec.minSeconds, maximum: spec.maxSeconds, description: `Length in seconds (default ${spec.defaultSeconds})` },
			aspect_ratio: { type: 'string', enum: [...spec.aspectRatios], description: `Frame shape (default ${spec.defaultAspectRatio}); a first frame's own shape wins` },
			resolution: { type: 'string', enum: [...spec.resolutions], description: `Default ${spec.defaultResolution}; 1080p costs twice as much` },
			fps: { type: 'integer', enum: [...spec.fps], description: `Frames per second (default ${spec.defaultFps})` },
			draft: { type: 'boolean', description: 'A faster preview at a quarter of the price' },
			seed: { type: 'integer', minimum: 0, description: 'The same seed and request give the same video' },
			image: { type: 'string', description: 'The first frame: an http(s) URL, a data URI or base64' },
			last_frame_image: { type: 'string', description: 'The last frame: an http(s) URL, a data URI or base64' },
			audio: { type: 'string', description: 'An audio track (flac, mp3, wav) by URL: the video follows its length' },
		},
		required: ['model', 'prompt'],
		additionalProperties: false,
	};
}

export function generateVideoTool(service: FastifyInstance, models: readonly VideoModelId[]): ToolDefinition {
	return {
		name: 'generate_video',
		title: 'Generate a video',
		description:
			'Starts a video from a prompt (and optionally a first frame) and answers its job at once: id (video_…), status and the asked length and size. ' +
			'Follow it with get_generation until it succeeded; its result then has the MP4\'s public URL (valid until expires_at) and the cost in USD. Call list_models for limits and prices.',
		inputSchema: generateVideoInputSchema(models, service.config.priceOverrides),
		annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
		async run(args, caller) {
			const video = parseVideoRequest(args);
			// The job runs on without the tool call that started it: it is followed with get_generation.
			const { job, answer } = await service.jobs.start(video, { apiKeyId: caller.apiKeyId, apiKey: caller.apiKey });
			void answer.catch(() => undefined);
			return videoObject(job);
		},
	};
}
