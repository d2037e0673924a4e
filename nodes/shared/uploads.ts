/** Hosting a file through `POST /uploads`, from a binary property (streamed) or a JSON reference. */
import type { IExecuteFunctions } from 'n8n-workflow';

import type { UploadResponse } from '../../core/api';
import type { BinaryInput } from './binary-input';
import { StreamedMultipartBody } from './multipart';
import type { RetryPolicy } from '../../core/retry-policy';
import { callApi, type ApiCall } from './transport';

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

/** Where an API call comes from: the node run, the item it is for, and that item's settings. */
export interface ItemCall {
	context: IExecuteFunctions;
	itemIndex: number;
	settings: RequestSettings;
}

async function postUpload(call: ItemCall, body: ApiCall['body']): Promise<HostedMedia> {
	const response = await callApi<UploadResponse>(call.context, { method: 'POST', path: '/uploads', body, itemIndex: call.itemIndex, ...call.settings });
	return toHostedMedia(response);
}

/** Streams a binary property as multipart: the file part is read from n8n's store as it is sent. */
export async function uploadBinary(call: ItemCall, input: BinaryInput, outputFormat: UploadFormat | undefined): Promise<HostedMedia> {
	return await postUpload(call, async () =>
		new StreamedMultipartBody(
			{ field: 'file', fileName: input.fileName, contentType: input.mimeType, size: input.size, content: await input.open() },
			outputFormat ? [{ field: 'output_format', value: outputFormat }] : [],
		),
	);
}

/** A URL the service fetches, or base64 / a data URI, sent as JSON; with `file` the bytes decide the kind. */
export async function uploadReference(call: ItemCall, field: 'file' | 'image' | 'video', value: string, outputFormat: UploadFormat | undefined): Promise<HostedMedia> {
	return await postUpload(call, () => ({ [field]: value, ...(outputFormat ? { output_format: outputFormat } : {}) }));
}
