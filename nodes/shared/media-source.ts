/**
 * Where a file comes from — a binary field of the input item, a URL or base64 — as both nodes
 * offer it: the choice and the one field that goes with each answer.
 */
import type { INodeProperties, INodePropertyOptions } from 'n8n-workflow';

interface MediaSourceText {
	/** What the file is, for descriptions: "image", "image or video". */
	noun: string;
	urlPlaceholder: string;
	/** Top-level parameters are required; entries of a collection are checked by the service. */
	required: boolean;
}

export function mediaSourceOptions({ noun }: MediaSourceText): INodePropertyOptions[] {
	return [
		{ name: 'Binary File', value: 'binary', description: 'A file from the input item, streamed when it is large' },
		{ name: 'URL', value: 'url', description: `A public http(s) address of the ${noun}, fetched by the service` },
		{ name: 'Base64', value: 'base64', description: 'Base64 content or a data URI' },
	];
}

/** The field for each source, shown only when that source is chosen in `selector`. */
export function mediaSourceFields(selector: string, text: MediaSourceText): INodeProperties[] {
	const when = (source: string) => ({ show: { [selector]: [source] } });
	return [
		{
			displayName: 'Input Binary Field',
			name: 'binaryPropertyName',
			type: 'string',
			required: text.required,
			default: 'data',
			hint: `The name of the input field holding the ${text.noun}`,
			displayOptions: when('binary'),
		},
		{
			displayName: 'URL',
			name: 'url',
			type: 'string',
			required: text.required,
			default: '',
			placeholder: text.urlPlaceholder,
			displayOptions: when('url'),
		},
		{
			displayName: 'Base64',
			name: 'base64',
			type: 'string',
			typeOptions: { rows: 2 },
			required: text.required,
			default: '',
			placeholder: 'data:image/png;base64,iVBORw0…',
			displayOptions: when('base64'),
		},
	];
}
