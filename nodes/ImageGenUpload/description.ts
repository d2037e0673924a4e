import type { INodeProperties } from 'n8n-workflow';

import { mediaSourceFields, mediaSourceOptions } from '../shared/media-source';
import { requestOptionProperties } from '../shared/request-options';
import { FIT_FOR_OPTIONS } from './fit-for';

const UPLOAD_SOURCE = { noun: 'image or video', urlPlaceholder: 'https://example.com/clip.mp4', required: true };
const VERIFY_SOURCE = { noun: 'image', urlPlaceholder: 'https://example.com/photo.jpg', required: true };

/** Shows a parameter for the named operations only; the others keep their own conditions. */
function forOperations(operations: string[], property: INodeProperties): INodeProperties {
	const show = { ...(property.displayOptions?.show ?? {}), operation: operations };
	return { ...property, displayOptions: { ...property.displayOptions, show } };
}

const uploadOptionProperties: INodeProperties[] = [
	{
		displayName: 'Fit For',
		name: 'fitFor',
		type: 'options',
		options: FIT_FOR_OPTIONS,
		default: 'none',
		description: 'Scale down and re-encode an image until it meets a platform’s limits (it overrides Output Format); videos are hosted as given',
		displayOptions: { show: { '/operation': ['upload'] } },
	},
	{
		displayName: 'Lifetime',
		// Seconds, as the service's `expires_in`.
		name: 'expiresIn',
		type: 'options',
		options: [
			{ name: '1 Hour', value: 3600 },
			{ name: '6 Hours', value: 21600 },
			{ name: '12 Hours', value: 43200 },
			{ name: '24 Hours', value: 86400 },
		],
		default: 86400,
		description: 'How long the file stays online; it cannot outlive the service’s retention',
		displayOptions: { show: { '/operation': ['upload'] } },
	},
	{
		displayName: 'Max Side (Px)',
		name: 'maxSide',
		type: 'number',
		typeOptions: { minValue: 16, maxValue: 8192 },
		default: 1440,
		description: 'The longest side of the hosted image, for Fit For "Custom"; the image is scaled down, never up',
		displayOptions: { show: { '/operation': ['upload'], fitFor: ['custom'] } },
	},
	{
		displayName: 'Max Size (MB)',
		name: 'maxSizeMb',
		type: 'number',
		typeOptions: { minValue: 0.01, numberPrecision: 2 },
		default: 8,
		description: 'The largest file size of the hosted image (1 MB = 1,000,000 bytes), for Fit For "Custom"',
		displayOptions: { show: { '/operation': ['upload'], fitFor: ['custom'] } },
	},
];

export const imageGenUploadProperties: INodeProperties[] = [
	{
		displayName: 'Operation',
		name: 'operation',
		type: 'options',
		noDataExpression: true,
		options: [
			{ name: 'Upload', value: 'upload', action: 'Upload a file', description: 'Host an image or video at a public URL' },
			{ name: 'Get Info', value: 'getInfo', action: 'Get info about a file', description: 'Type, size and expiry of a hosted file' },
			{ name: 'Delete', value: 'delete', action: 'Delete a file', description: 'Take a hosted file offline at once' },
			{
				name: 'Verify',
				value: 'verify',
				action: 'Check an image for generation marks',
				description: 'Whether an image carries C2PA credentials or the invisible watermark, and the generation they name',
			},
		],
		default: 'upload',
	},
	...[
		{
			displayName: 'Input Type',
			name: 'inputType',
			type: 'options',
			noDataExpression: true,
			options: mediaSourceOptions(UPLOAD_SOURCE),
			default: 'binary',
		} satisfies INodeProperties,
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
		} satisfies INodeProperties,
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
		} satisfies INodeProperties,
	].map((property) => forOperations(['upload'], property)),
	// Verify's own copies of the source parameters (same names, so a value survives switching): images only.
	...[
		{
			displayName: 'Input Type',
			name: 'inputType',
			type: 'options',
			noDataExpression: true,
			options: mediaSourceOptions(VERIFY_SOURCE),
			default: 'binary',
		} satisfies INodeProperties,
		...mediaSourceFields('inputType', VERIFY_SOURCE),
	].map((property) => forOperations(['verify'], property)),
	forOperations(['getInfo', 'delete'], {
		displayName: 'File ID or URL',
		name: 'fileId',
		type: 'string',
		required: true,
		default: '',
		placeholder: 'e.g. 3q2-7wEXAMPLEid or https://…/files/3q2-7wEXAMPLEid.png',
		description: 'The ID from an upload’s output, or the hosted URL itself',
	}),
	{
		displayName: 'Options',
		name: 'options',
		type: 'collection',
		placeholder: 'Add Option',
		default: {},
		options: [...uploadOptionProperties, ...requestOptionProperties],
	},
];
