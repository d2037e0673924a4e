/** Shapes of the service's successful answers, shared by the server and the nodes. */
import type { ModelId } from './models';

/**
 * What an answer says about a file's marks (DESIGN.md, "Provenance"): `signed` carries our C2PA
 * manifest, `kept` an upload's own manifest hosted unchanged, one that c2pa-rs validated; an
 * upload's `digital_source_type` comes only from such a manifest, never from XMP alone.
 */
export interface Provenance {
	c2pa: 'signed' | 'kept' | 'none';
	digital_source_type: string | null;
}

/** `seed`: the one the image was made with (the caller's, or drawn for them). */
export type GeneratedImage = ({ url: string; expires_at: string } | { b64_json: string }) & { seed: number; provenance?: Provenance };

export interface GenerationResponse {
	created: number;
	model: ModelId;
	output_format: string;
	data: GeneratedImage[];
	usage: { images: number; cost_usd: number };
}

/** What every hosted file is described by; services before these fields answered only the URL and expiry. */
export interface HostedFileFields {
	expiresAt: string;
	/** The file id in the URL, without extension. */
	id?: string;
	mimeType?: string;
	sizeBytes?: number;
	/** Absent from services that did not record provenance. */
	provenance?: Provenance;
}

export type UploadResponse = ({ imageUrl: string } | { videoUrl: string }) & HostedFileFields;

/** `GET /v1/files/<id>`. */
export interface FileInfoResponse {
	id: string;
	url: string;
	mimeType: string;
	sizeBytes: number;
	createdAt: string;
	expiresAt: string;
	provenance: Provenance;
}
