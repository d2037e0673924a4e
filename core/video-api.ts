/**
 * The videos API's answers (OpenAI's Video object, plus our `url` and `usage`), as zod schemas the
 * routes declare and the node reads the types of.
 */
import { z } from 'zod/v3';
export { videoResultSchema, type VideoResult } from './api';
import { VIDEO_MODEL_IDS } from './video-models';

export const VIDEO_STATUSES = ['queued', 'in_progress', 'completed', 'failed'] as const;
export type VideoStatus = (typeof VIDEO_STATUSES)[number];

export const videoObjectSchema = z
	.object({
		id: z.string().describe('video_ and 32 hex digits'),
		object: z.literal('video'),
		model: z.enum(VIDEO_MODEL_IDS),
		status: z.enum(VIDEO_STATUSES),
		progress: z.number().int().min(0).max(100),
		created_at: z.number().int().describe('Unix seconds'),
		completed_at: z.number().int().nullable(),
		expires_at: z.number().int().nullable().describe('When the hosted MP4 expires (unix seconds); null until completed'),
		seconds: z.string().describe('Length in whole seconds, as text (as OpenAI answers it)'),
		size: z.string().describe('WxH'),
		prompt: z.string().nullable(),
		remixed_from_video_id: z.null(),
		error: z.object({ code: z.string(), message: z.string(), param: z.string().nullable().optional() }).nullable(),
		url: z.string().url().nullable().describe('The hosted MP4 once completed (Range and HEAD), for the retention'),
		usage: z.object({ seconds: z.number().int(), cost_usd: z.number() }).nullable(),
	})
	.describe("A video job, as OpenAI's videos API answers it, plus url and usage");
export type VideoObject = z.infer<typeof videoObjectSchema>;

export const videoListSchema = z
	.object({
		object: z.literal('list'),
		data: z.array(videoObjectSchema).describe('Newest first'),
		first_id: z.string().nullable(),
		last_id: z.string().nullable(),
		has_more: z.boolean(),
	})
	.describe("The key's videos, newest first");

export const videoDeletedSchema = z.object({ id: z.string(), object: z.literal('video.deleted'), deleted: z.literal(true) });
