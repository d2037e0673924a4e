/**
 * One input item through the ImageGen node, in one straight path: resolve every input (uploading
 * binaries too large to inline) → build the request → validate it once → send it.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { MEDIA_DETAILS } from '../../core/media';
import { MODELS, type ModelId } from '../../core/models';
import { toGenerationBody, type GenerationParameters } from '../../core/request';
import { parseGenerationRequest, type GenerationRequest } from '../../core/schemas';
import { readGenerationAnswer, type AnsweredImage, type GenerationAnswer } from '../shared/answers';
import { idempotencyKey } from '../shared/idempotency';
import { toNodeError, validated } from '../shared/items';
import { readRequestSettings } from '../shared/request-options';
import { runsAsTool } from '../shared/tool-mode';
import { callApi } from '../shared/transport';
import { provenanceJson } from '../shared/provenance';
import type { ItemCall, RequestSettings } from '../shared/uploads';
import { resolveImage, type ImageSourceParameter, type ResolvedImage } from './image-inputs';

interface ImageGenOptions {
	download?: boolean;
	binaryPropertyName?: string;
	inlineLimitMb?: number;
	seed?: number;
}

const MEGABYTE = 1024 * 1024;

export async function generateForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const model = context.getNodeParameter('model', itemIndex) as ModelId;
	const accepted = MODELS[model]?.fields ?? [];
	const parameter = (name: string, fallback: unknown = '') => context.getNodeParameter(name, itemIndex, fallback);
	const asTool = runsAsTool(context);
	// As a tool the model needs a URL it can pass on, and the agent would drop a download anyway.
	const options = asTool ? { ...(parameter('options', {}) as ImageGenOptions), download: false } : (parameter('options', {}) as ImageGenOptions);
	const call: ItemCall = { context, itemIndex, settings: readRequestSettings(context, itemIndex) };

	const parameters: GenerationParameters = {
		model,
		prompt: parameter('prompt') as string,
		aspectRatio: parameter('aspectRatio') as string,
		outputFormat: parameter('outputFormat') as string,
		responseFormat: asTool ? 'url' : (parameter('responseFormat') as string),
		seed: options.seed,
	};
	if (accepted.includes('negative_prompt')) parameters.negativePrompt = parameter('negativePrompt') as string;
	if (accepted.includes('style_type')) parameters.styleType = parameter('styleType') as string;
	if (accepted.includes('magic_prompt_option')) parameters.magicPromptOption = parameter('magicPromptOption') as string;

	let uploaded: ResolvedImage[] = [];
	let request: GenerationRequest;
	try {
		if (accepted.includes('images')) {
			const sources = (parameter('images', {}) as { image?: ImageSourceParameter[] }).image ?? [];
			const inlineLimitBytes = (options.inlineLimitMb ?? 4) * MEGABYTE;
			const resolved = await Promise.allSettled(sources.map(async (source, position) => await resolveImage(call, source, position, inlineLimitBytes)));
			uploaded = resolved.flatMap((result) => (result.status === 'fulfilled' && result.value.uploadedId ? [result.value] : []));
			const failure = resolved.find((result) => result.status === 'rejected');
			if (failure) throw failure.reason;
			parameters.images = resolved.map((result) => (result as PromiseFulfilledResult<ResolvedImage>).value.value);
		}
		request = validated(context, itemIndex, () => parseGenerationRequest(toGenerationBody(parameters)));
	} catch (error) {
		// A request that is never sent leaves nothing hosted behind.
		await deleteUploads(call, uploaded);
		throw toNodeError(context, error, itemIndex);
	}

	const body: IDataObject = { ...request };
	const response = await callApi<unknown>(context, {
		method: 'POST',
		path: '/images/generations',
		body: () => ({ ...body }),
		headers: { 'Idempotency-Key': idempotencyKey(context, itemIndex, 'generation') },
		itemIndex,
		...call.settings,
	});
	const answer = readGenerationAnswer(context, itemIndex, response);
	if (asTool) return toolItems(request, answer);
	return await toOutputItems(context, itemIndex, request, answer, options, call.settings);
}

/** What a model calling the node as a tool can use: the hosted URL and what describes it, nothing else. */
function toolItems(request: GenerationRequest, answer: GenerationAnswer): INodeExecutionData[] {
	return answer.images.map((image) => ({
		json: {
			model: answer.model ?? request.model,
			...hostedFields(image),
			mimeType: MEDIA_DETAILS[request.output_format].mimeType,
			...describedFields(image, answer),
		},
	}));
}

/** The hosted URL and its expiry, for an image answered by URL. */
function hostedFields(image: AnsweredImage): IDataObject {
	if (!('url' in image)) return {};
	return { url: image.url, ...(image.expiresAt !== undefined ? { expiresAt: image.expiresAt } : {}) };
}

/** The seed used (services that take one echo it) and the cost, where the service said them. */
function describedFields(image: AnsweredImage, answer: GenerationAnswer): IDataObject {
	return {
		...(image.seed !== undefined ? { seed: image.seed } : {}),
		...provenanceJson(image.provenance),
		...(answer.costUsdPerImage !== undefined ? { costUsd: answer.costUsdPerImage } : {}),
	};
}

async function deleteUploads(call: ItemCall, uploaded: ResolvedImage[]): Promise<void> {
	await Promise.allSettled(
		uploaded.map(async (image) =>
			await callApi<unknown>(call.context, {
				method: 'DELETE',
				path: `/files/${encodeURIComponent(image.uploadedId ?? '')}`,
				itemIndex: call.itemIndex,
				timeoutMs: call.settings.timeoutMs,
				retry: { ...call.settings.retry, maxRetries: 0 },
			}),
		),
	);
}

async function toOutputItems(
	context: IExecuteFunctions,
	itemIndex: number,
	request: GenerationRequest,
	answer: GenerationAnswer,
	options: ImageGenOptions,
	settings: RequestSettings,
): Promise<INodeExecutionData[]> {
	const format = MEDIA_DETAILS[request.output_format];
	const created = new Date((answer.created ?? Math.floor(Date.now() / 1000)) * 1000).toISOString();
	const binaryPropertyName = options.binaryPropertyName || 'data';
	const count = answer.images.length;
	return await Promise.all(
		answer.images.map(async (image, index) => {
			const fileName = `${request.model}-${created.replace(/[:.]/g, '-')}${count > 1 ? `-${index + 1}` : ''}.${format.extension}`;
			let bytes: Buffer | undefined;
			if ('b64Json' in image) bytes = Buffer.from(image.b64Json, 'base64');
			else if (options.download !== false) bytes = await download(context, itemIndex, image.url, settings);
			const json: IDataObject = {
				model: answer.model ?? request.model,
				prompt: request.prompt,
				...hostedFields(image),
				outputFormat: request.output_format,
				mimeType: format.mimeType,
				...(bytes ? { sizeBytes: bytes.byteLength } : {}),
				fileName,
				...describedFields(image, answer),
				created,
			};
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

