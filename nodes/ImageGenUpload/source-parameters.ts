import type { IExecuteFunctions } from 'n8n-workflow';

import { invalidField } from '../../core/errors';
import { parseMediaInput, sniffMedia, SNIFF_BYTES, type SniffedMedia } from '../../core/media';
import { validated } from '../shared/items';

/** The item's `url` parameter, trimmed; one that is not an http(s) URL fails the item pointing at it. */
export function urlParameter(context: IExecuteFunctions, itemIndex: number): string {
	const url = (context.getNodeParameter('url', itemIndex) as string).trim();
	validated(
		context,
		itemIndex,
		() => {
			if (parseMediaInput(url, 'url').kind !== 'url') {
				throw invalidField('url', "'url' must be an http(s) URL; for base64 content choose the input type Base64");
			}
		},
		'url',
	);
	return url;
}

/** The item's `base64` parameter, trimmed, and what its bytes are; a URL or bad base64 fails the item pointing at it. */
export function base64Parameter(context: IExecuteFunctions, itemIndex: number): { value: string; media: SniffedMedia | null } {
	const value = (context.getNodeParameter('base64', itemIndex) as string).trim();
	const media = validated(
		context,
		itemIndex,
		() => {
			const parsed = parseMediaInput(value, 'base64');
			if (parsed.kind === 'url') throw invalidField('base64', "'base64' holds a URL: choose the input type URL for it");
			return sniffMedia(parsed.bytes.subarray(0, SNIFF_BYTES));
		},
		'base64',
	);
	return { value, media };
}
