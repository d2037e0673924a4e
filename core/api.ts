/** Shapes of the service's successful answers, shared by the server and the nodes. */
import type { ModelId } from './models';

/** `seed`: the one the image was made with (the caller's, or drawn for them). */
export type GeneratedImage = ({ url: string; expires_at: string } | { b64_json: string }) & { seed: number };

export interface GenerationResponse {
	created: number;
	model: ModelId;
	output_format: string;
	data: GeneratedImage[];
	usage: { images: number; cost_usd: number };
}

export type UploadResponse =
	| { imageUrl: string; expiresAt: string }
	| { videoUrl: string; expiresAt: string };
