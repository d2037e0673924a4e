import type { IExecuteFunctions } from 'n8n-workflow';

import { invalidField } from '../../core/errors';
import { parseMediaInput } from '../../core/media';
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
