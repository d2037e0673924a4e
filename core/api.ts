/**
 * Shapes of the service's successful answers, shared by the server and the nodes: zod schemas,
 * whose inferred types the code uses and which the service's routes declare, so the OpenAPI
 * document states the very shapes the handlers are type-checked against. The nodes import only
 * the types.
 */
import { z } from 'zod/v3';
import { MODEL_IDS } from './models';
import { VIDEO_MODEL_IDS } from './video-models';

const instant = z.string().datetime({ offset: true });

/**
 * What an answer says about a file's marks: `signed` carries our C2PA manifest, `kept` an upload's
 * own manifest hosted unchanged, one that c2pa-rs validated; an upload's `digital_source_type`
 * comes only from such a manifest, never from XMP alone.
 */
export const provenanceSchema = z
	.object({ c2pa: z.enum(['signed', 'kept', 'none']), digital_source_type: z.string().url().nullable() })
	.describe("The file's marks: signed (our C2PA manifest), kept (an upload's own manifest that validates, hosted unchanged) or none; an upload's digital_source_type comes only from a manifest that validates");
export type Provenance = z.infer<typeof provenanceSchema>;

/** What a file with no marks (or a service that marks nothing) says. */
export const NO_PROVENANCE: Provenance = { c2pa: 'none', digital_source_type: null };

/** IPTC's term for media made by a trained model: what every generated image says it is. */
export const TRAINED_ALGORITHMIC_MEDIA = 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia';

/**
 * `seed`: the one the image was made with (the caller's, or drawn for them); absent when the host
 * drew it with a seed of its own (a ComfyUI workflow without `{{seed}}`).
 */
const imageMarks = { seed: z.number().int().optional(), provenance: provenanceSchema.optional() };
export const generatedImageSchema = z.union([
	z.object({ url: z.string().url(), expires_at: instant, ...imageMarks }),
	z.object({ b64_json: z.string(), ...imageMarks }),
]);
export type GeneratedImage = z.infer<typeof generatedImageSchema>;

export const generationResponseSchema = z
	.object({
		created: z.number().int().describe('Unix seconds'),
		model: z.enum(MODEL_IDS),
		output_format: z.string(),
		data: z.array(generatedImageSchema),
		usage: z.object({ images: z.number().int(), cost_usd: z.number() }),
	})
	.describe('The image');
export type GenerationResponse = z.infer<typeof generationResponseSchema>;

const hostedFile = z.object({
	id: z.string(),
	url: z.string().url().describe('Public, for the retention; Range and HEAD'),
	bytes: z.number().int(),
	expires_at: z.number().int().describe('Unix seconds'),
});

/** What a finished video job keeps: where its MP4 and still are, and what it cost. */
export const videoResultSchema = z
	.object({
		object: z.literal('video.result'),
		video: hostedFile.extend({ provenance: provenanceSchema.optional() }),
		thumbnail: hostedFile.nullable(),
		seconds: z.number().int().describe('Whole seconds of the MP4, as billed'),
		size: z.string().describe('WxH of its frames'),
		usage: z.object({ seconds: z.number().int(), cost_usd: z.number() }),
	})
	.describe("A video job's result: its hosted MP4, the still of its first frame, its length and cost");
export type VideoResult = z.infer<typeof videoResultSchema>;

export const GENERATION_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;

/** A generation as a job: every generation is one, the synchronous ones too. */
export const generationObjectSchema = z
	.object({
		object: z.literal('generation'),
		id: z.string().describe('gen_ (images) or video_ (videos) and 32 hex digits'),
		status: z.enum(GENERATION_STATUSES),
		model: z.enum([...MODEL_IDS, ...VIDEO_MODEL_IDS]),
		created: z.number().int().describe('Unix seconds'),
		finished_at: z.number().int().nullable().describe('Unix seconds; null while it runs'),
		result: z
			.union([generationResponseSchema, videoResultSchema])
			.nullable()
			.describe('Exactly the body a synchronous call answers (a video: its hosted MP4 and cost); null until it succeeded'),
		error: z
			.object({ message: z.string(), type: z.string(), param: z.string().nullable(), code: z.string() })
			.nullable()
			.describe('Why it failed or was canceled (the shape of every error); null otherwise'),
	})
	.describe('A generation job');
export type GenerationObjectBody = z.infer<typeof generationObjectSchema>;

export const generationListSchema = z
	.object({ object: z.literal('list'), data: z.array(generationObjectSchema).describe('Newest first') })
	.describe("The key's generations");

/** What every hosted file is described by; services before these fields answered only the URL and expiry. */
const hostedFileFields = {
	expiresAt: instant,
	/** The file id in the URL, without extension. */
	id: z.string().optional(),
	mimeType: z.string().optional(),
	sizeBytes: z.number().int().optional(),
	/** Absent from services that did not record provenance. */
	provenance: provenanceSchema.optional(),
};

export const uploadResponseSchema = z
	.union([z.object({ imageUrl: z.string().url(), ...hostedFileFields }), z.object({ videoUrl: z.string().url(), ...hostedFileFields })])
	.describe('Hosted');
export type UploadResponse = z.infer<typeof uploadResponseSchema>;

/** `GET /v1/files/<id>`. */
export const fileInfoResponseSchema = z
	.object({
		id: z.string(),
		url: z.string().url(),
		mimeType: z.string(),
		sizeBytes: z.number().int(),
		createdAt: instant,
		expiresAt: instant,
		provenance: provenanceSchema,
	})
	.describe('The file');
export type FileInfoResponse = z.infer<typeof fileInfoResponseSchema>;

/** `GET /v1/webhooks/secret`: what the calling key's webhook deliveries are signed with. */
export const webhookSecretResponseSchema = z
	.object({
		secret: z
			.string()
			.regex(/^whsec_[A-Za-z0-9+/]+={0,2}$/)
			.describe('whsec_ and the base64 of the HMAC-SHA256 key (Standard Webhooks); the same on every replica and after restarts'),
	})
	.describe('The signing secret');
export type WebhookSecretResponse = z.infer<typeof webhookSecretResponseSchema>;
