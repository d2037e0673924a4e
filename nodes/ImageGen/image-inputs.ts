/**
 * The `images` parameter of p-image-edit resolved to what the API takes. URLs and base64 pass as
 * given; a binary property is inlined as a data URI when small, or marked for upload when large so
 * the generation request stays small and the file is streamed instead of base64-encoded in memory.
 */
import type { IExecuteFunctions } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { IMAGE_TYPES, sniffMedia, SNIFF_BYTES } from '../../core/media';
import { readBinaryInput, type BinaryInput } from '../shared/binary-input';

export interface ImageSourceParameter {
	source?: 'binary' | 'url' | 'base64';
	binaryPropertyName?: string;
	url?: string;
	base64?: string;
}

export type ResolvedImage = { value: string } | { upload: BinaryInput };

export async function resolveImage(
	context: IExecuteFunctions,
	itemIndex: number,
	source: ImageSourceParameter,
	position: number,
	inlineLimitBytes: number,
): Promise<ResolvedImage> {
	if (source.source === 'url') return { value: source.url ?? '' };
	if (source.source === 'base64') return { value: source.base64 ?? '' };
	const propertyName = source.binaryPropertyName || 'data';
	const input = await readBinaryInput(context, itemIndex, propertyName);
	if (input.size > inlineLimitBytes) return { upload: input };
	const bytes = await input.readAll();
	const media = sniffMedia(bytes.subarray(0, SNIFF_BYTES));
	if (media?.kind !== 'image') {
		throw new NodeOperationError(
			context.getNode(),
			`Parameter 'images' (image ${position + 1}) of item ${itemIndex}: the binary field '${propertyName}' does not hold an image (${IMAGE_TYPES.join(', ')}); it holds ${media ? media.mimeType : input.mimeType}`,
			{ itemIndex },
		);
	}
	return { value: `data:${media.mimeType};base64,${bytes.toString('base64')}` };
}

/**
 * Stands in for an image that is uploaded only after the whole request has been validated, so an
 * invalid request never leaves a hosted file behind. The `.invalid` TLD can never resolve.
 */
export function pendingUploadPlaceholder(position: number): string {
	return `https://pending-upload-${position}.invalid/image`;
}
