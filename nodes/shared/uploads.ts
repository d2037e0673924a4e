/** Hosting a file through `POST /uploads`, from a binary property (streamed) or a JSON reference. */
import type { IExecuteFunctions } from 'n8n-workflow';

import type { UploadResponse } from '../../core/api';
import type { BinaryInput } from './binary-input';
import { StreamedMultipartBody } from './multipart';
import type { RetryPolicy } from '../../core/retry-policy';
import { callApi } from './transport';

export interface RequestSettings {
	timeoutMs: number;
	retry: RetryPolicy;
}

export interface HostedMedia {
	mediaType: 'image' | 'video';
	url: string;
	expiresAt: string;
}

export type UploadFormat = 'webp' | 'png' | 'jpg';

export function toHostedMedia(response: UploadResponse): HostedMedia {
	if ('videoUrl' in response) return { mediaType: 'video', url: response.videoUrl, expiresAt: response.expiresAt };
	return { mediaType: 'image', url: response.imageUrl, expiresAt: response.expiresAt };
}

export async function uploadBinary(
	context: IExecuteFunctions,
	itemIndex: number,
	input: BinaryInput,
	outputFormat: UploadFormat | undefined,
	settings: RequestSettings,
): Promise<HostedMedia> {
	const response = await callApi<UploadResponse>(context, {
		method: 'POST',
		path: '/uploads',
		body: async () =>
			new StreamedMultipartBody(
				{ field: 'file', fileName: input.fileName, contentType: input.mimeType, size: input.size, content: await input.open() },
				outputFormat ? [{ field: 'output_format', value: outputFormat }] : [],
			),
		itemIndex,
		...settings,
	});
	return toHostedMedia(response);
}

export async function uploadReference(
	context: IExecuteFunctions,
	itemIndex: number,
	field: 'image' | 'video',
	value: string,
	outputFormat: UploadFormat | undefined,
	settings: RequestSettings,
): Promise<HostedMedia> {
	const response = await callApi<UploadResponse>(context, {
		method: 'POST',
		path: '/uploads',
		body: () => ({ [field]: value, ...(outputFormat ? { output_format: outputFormat } : {}) }),
		itemIndex,
		...settings,
	});
	return toHostedMedia(response);
}
