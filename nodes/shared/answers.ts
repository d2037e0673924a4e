/**
 * The service's successful answers as the nodes read them. Any OpenAI-compatible image service may
 * stand behind the credential's Base URL, so only what the nodes cannot work without is required:
 * an image (`data[].url` or `data[].b64_json`) in a generation answer, a URL (`imageUrl` or
 * `videoUrl`) in an upload answer. Every other field is used when it is present and well-formed,
 * and left out of the output when it is not; nothing is made up in its place.
 */
import type { IExecuteFunctions, JsonObject } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import type { Provenance } from '../../core/api';
import type { HostedMedia } from './uploads';

export type AnsweredImage = ({ url: string; expiresAt?: string } | { b64Json: string }) & { seed?: number; provenance?: Provenance };

export interface GenerationAnswer {
	images: AnsweredImage[];
	/** Unix seconds. */
	created?: number;
	model?: string;
	/** The format the service says it encoded the images in (`output_format`). */
	outputFormat?: string;
	/** The cost of one image, when the service says what the request cost. */
	costUsdPerImage?: number;
}

type Fields = Record<string, unknown>;

export const fieldsOf = (value: unknown): Fields => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : {});
const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const finite = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined);
/** `{ [name]: value }` when there is a value, else nothing: spread into an item's JSON. */
const present = <T>(name: string, value: T | undefined): Record<string, T> => (value === undefined ? {} : { [name]: value });

export function readGenerationAnswer(context: IExecuteFunctions, itemIndex: number, body: unknown): GenerationAnswer {
	const answer = fieldsOf(body);
	const images = (Array.isArray(answer.data) ? answer.data : []).map(toAnsweredImage);
	if (images.length === 0 || images.includes(undefined)) {
		throw unusableAnswer(context, itemIndex, body, 'an image: a generation answer needs data[].url or data[].b64_json');
	}
	const costUsd = finite(fieldsOf(answer.usage).cost_usd);
	return {
		images: images as AnsweredImage[],
		...present('created', finite(answer.created)),
		...present('model', text(answer.model)),
		...present('outputFormat', text(answer.output_format)),
		...present('costUsdPerImage', costUsd === undefined ? undefined : costUsd / images.length),
	};
}

function toAnsweredImage(item: unknown): AnsweredImage | undefined {
	const image = fieldsOf(item);
	const seed = finite(image.seed);
	const withSeed = {
		...present('seed', seed !== undefined && Number.isInteger(seed) ? seed : undefined),
		...present('provenance', readProvenance(image.provenance)),
	};
	const b64Json = text(image.b64_json);
	if (b64Json) return { b64Json, ...withSeed };
	const url = text(image.url);
	return url ? { url, ...present('expiresAt', text(image.expires_at)), ...withSeed } : undefined;
}

export function readUploadAnswer(context: IExecuteFunctions, itemIndex: number, body: unknown): HostedMedia {
	const answer = fieldsOf(body);
	const videoUrl = text(answer.videoUrl);
	const url = videoUrl ?? text(answer.imageUrl);
	if (!url) throw unusableAnswer(context, itemIndex, body, 'a URL: an upload answer needs imageUrl or videoUrl');
	const sizeBytes = finite(answer.sizeBytes);
	return {
		mediaType: videoUrl ? 'video' : 'image',
		url,
		...present('expiresAt', text(answer.expiresAt)),
		...present('id', text(answer.id) ?? hostedFileId(url)),
		...present('mimeType', text(answer.mimeType)),
		...present('sizeBytes', sizeBytes !== undefined && Number.isInteger(sizeBytes) ? sizeBytes : undefined),
		...present('provenance', readProvenance(answer.provenance)),
	};
}

const C2PA_STATES: readonly Provenance['c2pa'][] = ['signed', 'kept', 'none'];

/** A file's marks as the service describes them; anything else (another service's field) is left out. */
function readProvenance(value: unknown): Provenance | undefined {
	const fields = fieldsOf(value);
	const c2pa = C2PA_STATES.find((state) => state === fields.c2pa);
	if (c2pa === undefined) return undefined;
	return { c2pa, digital_source_type: text(fields.digital_source_type) ?? null };
}

/** The last path segment of a file URL without its extension: the id the service gives a file. */
export function fileIdFromUrl(url: string): string {
	const name = new URL(url).pathname.split('/').pop() ?? '';
	return decodeURIComponent(name.replace(/\.[^.]*$/, ''));
}

/** The id in a URL of the form `…/files/<id>.<ext>`; another service's URLs carry none. */
function hostedFileId(url: string): string | undefined {
	try {
		return /\/files\/[^/]+$/.test(new URL(url).pathname) ? fileIdFromUrl(url) || undefined : undefined;
	} catch {
		return undefined;
	}
}

export function unusableAnswer(context: IExecuteFunctions, itemIndex: number, body: unknown, missing: string): NodeApiError {
	return new NodeApiError(context.getNode(), { body: JSON.stringify(body ?? null).slice(0, 2000) } as JsonObject, {
		message: `The ImageGen API answered without ${missing}`,
		description: 'Check that the Base URL of the ImageGen API credential points at an image service with an OpenAI-compatible API.',
		itemIndex,
	});
}
