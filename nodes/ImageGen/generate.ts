/** One input item through the ImageGen node: parameters → validated request → images as output items. */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { GenerationResponse } from '../../core/api';
import { MEDIA_DETAILS } from '../../core/media';
import { MODELS, type ModelId } from '../../core/models';
import { toGenerationBody, type GenerationParameters } from '../../core/request';
import { parseGenerationRequest, type GenerationRequest } from '../../core/schemas';
import { validated } from '../shared/items';
import { readRequestSettings } from '../shared/request-options';
import { callApi } from '../shared/transport';
import { uploadBinary, type ItemCall, type RequestSettings } from '../shared/uploads';
import { pendingUploadPlaceholder, resolveImage, type ImageSourceParameter, type ResolvedImage } from './image-inputs';

interface ImageGenOptions {
	download?: boolean;
	binaryPropertyName?: string;
	inlineLimitMb?: number;
}

const MEGABYTE = 1024 * 1024;

export async function generateForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const model = context.getNodeParameter('model', itemIndex) as ModelId;
	const accepted = MODELS[model]?.fields ?? [];
	const parameter = (name: string, fallback: unknown = '') => context.getNodeParameter(name, itemIndex, fallback);
	const options = parameter('options', {}) as ImageGenOptions;
	const settings = readRequestSettings(context, itemIndex);

	const parameters: GenerationParameters = {
		model,
		prompt: parameter('prompt') as string,
		aspectRatio: parameter('aspectRatio') as string,
		outputFormat: parameter('outputFormat') as string,
		responseFormat: parameter('responseFormat') as string,
	};
	if (accepted.includes('negative_prompt')) parameters.negativePrompt = parameter('negativePrompt') as string;
	if (accepted.includes('style_type')) parameters.styleType = parameter('styleType') as string;
	if (accepted.includes('magic_prompt_option')) parameters.magicPromptOption = parameter('magicPromptOption') as string;

	let resolved: ResolvedImage[] = [];
	if (accepted.includes('images')) {
		const sources = (parameter('images', {}) as { image?: ImageSourceParameter[] }).image ?? [];
		const inlineLimitBytes = (options.inlineLimitMb ?? 4) * MEGABYTE;
		resolved = await Promise.all(
			sources.map(async (source, position) => await resolveImage(context, itemIndex, source, position, inlineLimitBytes)),
		);
		parameters.images = resolved.map((image, position) => ('value' in image ? image.value : pendingUploadPlaceholder(position)));
	}

	const request: GenerationRequest = validated(context, itemIndex, () => parseGenerationRequest(toGenerationBody(parameters)));
	if (request.images) request.images = await uploadLargeImages({ context, itemIndex, settings }, request.images, resolved);

	const response = await callApi<GenerationResponse>(context, {
		method: 'POST',
		path: '/images/generations',
		body: () => ({ ...request }),
		itemIndex,
		...settings,
	});
	return await toOutputItems(context, itemIndex, request, response, options, settings);
}

async function uploadLargeImages(call: ItemCall, images: string[], resolved: ResolvedImage[]): Promise<string[]> {
	return await Promise.all(
		images.map(async (value, position) => {
			const image = resolved[position];
			if (!image || 'value' in image) return value;
			return (await uploadBinary(call, image.upload, undefined)).url;
		}),
	);
}

async function toOutputItems(
	context: IExecuteFunctions,
	itemIndex: number,
	request: GenerationRequest,
	response: GenerationResponse,
	options: ImageGenOptions,
	settings: RequestSettings,
): Promise<INodeExecutionData[]> {
	const format = MEDIA_DETAILS[request.output_format];
	const created = new Date((response.created ?? Math.floor(Date.now() / 1000)) * 1000).toISOString();
	const costUsd = response.data.length > 0 ? response.usage.cost_usd / response.data.length : 0;
	const binaryPropertyName = options.binaryPropertyName || 'data';
	return await Promise.all(
		response.data.map(async (image, index) => {
			const fileName = `${request.model}-${created.replace(/[:.]/g, '-')}${response.data.length > 1 ? `-${index + 1}` : ''}.${format.extension}`;
			const json = {
				model: response.model ?? request.model,
				prompt: request.prompt,
				...('url' in image ? { url: image.url, expiresAt: image.expires_at } : {}),
				outputFormat: request.output_format,
				mimeType: format.mimeType,
				fileName,
				costUsd,
				created,
			};
			let bytes: Buffer | undefined;
			if ('b64_json' in image) bytes = Buffer.from(image.b64_json, 'base64');
			else if (options.download !== false) bytes = await download(context, itemIndex, image.url, settings);
			if (!bytes) return { json };
			const binary = await context.helpers.prepareBinaryData(bytes, fileName, format.mimeType);
			return { json, binary: { [binaryPropertyName]: binary } };
		}),
	);
}

async function download(context: IExecuteFunctions, itemIndex: number, url: string, settings: RequestSettings): Promise<Buffer> {
	try {
		const body = (await context.helpers.httpRequest({ method: 'GET', url, encoding: 'arraybuffer', timeout: settings.timeoutMs })) as ArrayBuffer | Buffer;
		return Buffer.isBuffer(body) ? body : Buffer.from(body);
	} catch (error) {
		throw new NodeApiError(context.getNode(), { message: (error as Error).message }, {
			message: `The image was generated but could not be downloaded from ${url}: ${(error as Error).message}`,
			description: 'Turn off the option "Download Image" to keep only the hosted URL.',
			itemIndex,
		});
	}
}
