/**
 * A generation answer as output items, the same for every way the node obtains one (a synchronous
 * answer, a job it waited for, a job fetched by Get Generation): `json` describing each image and,
 * when the answer holds the bytes or Download Image is on, the image as binary.
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { IMAGE_TYPES, MEDIA_DETAILS, sniffMedia, type ImageType, type SniffedMedia } from '../../core/media';
import type { AnsweredImage, GenerationAnswer } from '../shared/answers';
import { provenanceJson } from '../shared/provenance';
import type { RequestSettings } from '../shared/uploads';

/** What the node knows of the request behind an answer; Get Generation knows only the model. */
export interface GenerationSubject {
	model: string;
	prompt?: string;
	/** The requested format; when unknown, the answer's `output_format` or the bytes decide. */
	outputFormat?: ImageType;
}

export interface ImageOutputOptions {
	download?: boolean;
	binaryPropertyName?: string;
}

/** What a model calling the node as a tool can use: the hosted URL and what describes it, nothing else. */
export function toolItems(subject: GenerationSubject, answer: GenerationAnswer): INodeExecutionData[] {
	const format = imageFormat(subject.outputFormat ?? answer.outputFormat);
	return answer.images.map((image) => ({
		json: {
			model: answer.model ?? subject.model,
			...hostedFields(image),
			...(format ? { mimeType: format.mimeType } : {}),
			...describedFields(image, answer),
		},
	}));
}

export async function toOutputItems(
	context: IExecuteFunctions,
	itemIndex: number,
	subject: GenerationSubject,
	answer: GenerationAnswer,
	options: ImageOutputOptions,
	settings: RequestSettings,
): Promise<INodeExecutionData[]> {
	const created = new Date((answer.created ?? Math.floor(Date.now() / 1000)) * 1000).toISOString();
	const binaryPropertyName = options.binaryPropertyName || 'data';
	const model = answer.model ?? subject.model;
	const count = answer.images.length;
	return await Promise.all(
		answer.images.map(async (image, index) => {
			let bytes: Buffer | undefined;
			if ('b64Json' in image) bytes = Buffer.from(image.b64Json, 'base64');
			else if (options.download !== false) bytes = await download(context, itemIndex, image.url, settings);
			const format = imageFormat(subject.outputFormat ?? answer.outputFormat) ?? formatFromContent(bytes, image);
			const fileName = `${subject.model}-${created.replace(/[:.]/g, '-')}${count > 1 ? `-${index + 1}` : ''}${format ? `.${format.extension}` : ''}`;
			const json: IDataObject = {
				model,
				...(subject.prompt !== undefined ? { prompt: subject.prompt } : {}),
				...hostedFields(image),
				...(format ? { outputFormat: format.type, mimeType: format.mimeType } : {}),
				...(bytes ? { sizeBytes: bytes.byteLength } : {}),
				fileName,
				...describedFields(image, answer),
				created,
			};
			if (!bytes) return { json };
			const binary = await context.helpers.prepareBinaryData(bytes, fileName, format?.mimeType);
			return { json, binary: { [binaryPropertyName]: binary } };
		}),
	);
}

/** The image format a name stands for (`png`, `jpeg`, `webp`, …), or nothing for anything else. */
function imageFormat(name: string | undefined): SniffedMedia | undefined {
	return IMAGE_TYPES.includes(name as ImageType) ? MEDIA_DETAILS[name as ImageType] : undefined;
}

/** The format of an image whose request is unknown: from its bytes, else from its URL's extension. */
function formatFromContent(bytes: Buffer | undefined, image: AnsweredImage): SniffedMedia | undefined {
	const sniffed = bytes ? sniffMedia(bytes) : null;
	if (sniffed?.kind === 'image') return sniffed;
	if (!('url' in image)) return undefined;
	const extension = /\.([a-z0-9]+)$/i.exec(new URL(image.url).pathname)?.[1]?.toLowerCase();
	return imageFormat(extension === 'jpg' ? 'jpeg' : extension);
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
