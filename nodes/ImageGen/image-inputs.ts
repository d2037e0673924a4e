/**
 * An input image — an entry of p-image-edit's `images`, a first or last frame of p-video —
 * resolved to what the API takes. URLs and base64 pass as given; a binary property is inlined as a
 * data URI when small, or uploaded when large (streamed, never base64-encoded in memory) and
 * passed as its hosted URL.
 */
import { NodeOperationError } from 'n8n-workflow';

import { IMAGE_TYPES, sniffMedia, SNIFF_BYTES } from '../../core/media';
import { readBinaryInput } from '../shared/binary-input';
import { idempotencyKey } from '../shared/idempotency';
import { callApi } from '../shared/transport';
import { uploadBinary, type ItemCall } from '../shared/uploads';

export interface ImageSourceParameter {
	source?: 'binary' | 'url' | 'base64';
	binaryPropertyName?: string;
	url?: string;
	base64?: string;
}

export interface ResolvedImage {
	/** What the request carries: a URL, base64 or a data URI. */
	value: string;
	/** Set when the image was uploaded to be passed by URL. */
	uploadedId?: string;
}

/** Which input an image is: how errors name it, and what its upload's idempotency key is for. */
export interface ImageSlot {
	/** e.g. `'images' (image 2)` or `'firstFrame'`. */
	label: string;
	/** e.g. `image-1` or `first-frame`; unique within one item's request. */
	purpose: string;
}

/** The slot of the entry at `position` of `images`. */
export function imagesEntry(position: number): ImageSlot {
	return { label: `'images' (image ${position + 1})`, purpose: `image-${position}` };
}

export async function resolveImage(call: ItemCall, source: ImageSourceParameter, slot: ImageSlot, inlineLimitBytes: number): Promise<ResolvedImage> {
	const { context, itemIndex } = call;
	if (source.source === 'url') return { value: source.url ?? '' };
	if (source.source === 'base64') return { value: source.base64 ?? '' };
	const propertyName = source.binaryPropertyName || 'data';
	const input = await readBinaryInput(context, itemIndex, propertyName);
	if (input.size > inlineLimitBytes) {
		// Keyed like the generation, so a repeated run gets the same hosted URL and so the same request body.
		const hosted = await uploadBinary(call, input, {}, { idempotencyKey: idempotencyKey(context, itemIndex, slot.purpose) });
		return { value: hosted.url, uploadedId: hosted.id };
	}
	const bytes = await input.readAll();
	const media = sniffMedia(bytes.subarray(0, SNIFF_BYTES));
	if (media?.kind !== 'image') {
		throw new NodeOperationError(
			context.getNode(),
			`Parameter ${slot.label} of item ${itemIndex}: the binary field '${propertyName}' does not hold an image (${IMAGE_TYPES.join(', ')}); it holds ${media ? media.mimeType : input.mimeType}`,
			{ itemIndex },
		);
	}
	return { value: `data:${media.mimeType};base64,${bytes.toString('base64')}` };
}

/** Deletes what was uploaded for a request that is never sent: it would stay hosted for nothing. */
export async function deleteUploads(call: ItemCall, uploaded: ResolvedImage[]): Promise<void> {
	await Promise.allSettled(
		uploaded.map(async (image) =>
			await callApi<unknown>(call.context, {
				method: 'DELETE',
				path: `/files/${encodeURIComponent(image.uploadedId ?? '')}`,
				itemIndex: call.itemIndex,
				timeoutMs: call.settings.timeoutMs,
				retry: { ...call.settings.retry, maxRetries: 0 },
			}),
		),
	);
}
