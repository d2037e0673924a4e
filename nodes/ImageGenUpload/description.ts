import type { INodeProperties } from 'n8n-workflow';

import { requestOptionProperties } from '../shared/request-options';

export const imageGenUploadProperties: INodeProperties[] = [
	{
		displayName: 'Input Type',
		name: 'inputType',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Binary File', value: 'binary', description: 'A file from the input item, streamed to the service' },
			{ name: 'URL', value: 'url', description: 'A public http(s) address the service fetches' },
			{ name: 'Base64', value: 'base64', description: 'Base64 content or a data URI' },
		],
		default: 'binary',
	},
	{
		displayName: 'Input Binary Field',
		name: 'binaryPropertyName',
		type: 'string',
		required: true,
		default: 'data',
		hint: 'The name of the input field holding the image or video',
		displayOptions: { show: { inputType: ['binary'] } },
	},
	{
		displayName: 'URL',
		name: 'url',
		type: 'string',
		required: true,
		default: '',
		placeholder: 'https://example.com/clip.mp4',
		displayOptions: { show: { inputType: ['url'] } },
	},
	{
		displayName: 'Base64',
		name: 'base64',
		type: 'string',
		typeOptions: { rows: 2 },
		required: true,
		default: '',
		placeholder: 'data:image/png;base64,iVBORw0…',
		displayOptions: { show: { inputType: ['base64'] } },
	},
	{
		displayName: 'Media Type',
		name: 'mediaType',
		type: 'options',
		options: [
			{ name: 'Auto-Detect', value: 'auto', description: 'Decided from the file’s bytes' },
			{ name: 'Image', value: 'image' },
			{ name: 'Video', value: 'video' },
		],
		default: 'auto',
		description: 'What the file must be; the upload fails when it is something else',
	},
	{
		displayName: 'Output Format',
		name: 'outputFormat',
		type: 'options',
		options: [
			{ name: 'Original', value: 'original', description: 'Host the bytes exactly as given' },
			{ name: 'WebP', value: 'webp' },
			{ name: 'PNG', value: 'png' },
			{ name: 'JPG', value: 'jpg' },
		],
		default: 'original',
		description: 'Convert an image before hosting it; videos are always hosted as given',
		displayOptions: { hide: { mediaType: ['video'] } },
	},
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: requestOptionProperties,
	},
];
