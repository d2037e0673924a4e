import type { INodeProperties } from 'n8n-workflow';

import { mediaSourceFields, mediaSourceOptions } from '../shared/media-source';
import { requestOptionProperties } from '../shared/request-options';

const UPLOAD_SOURCE = { noun: 'image or video', urlPlaceholder: 'https://example.com/clip.mp4', required: true };

export const imageGenUploadProperties: INodeProperties[] = [
	{
		displayName: 'Input Type',
		name: 'inputType',
		type: 'options',
		noDataExpression: true,
		options: mediaSourceOptions(UPLOAD_SOURCE),
		default: 'binary',
	},
	...mediaSourceFields('inputType', UPLOAD_SOURCE),
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
