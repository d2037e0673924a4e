/**
 * The Verify operation of the ImageGen Upload node: asks the service which marks an image carries
 * (a C2PA manifest, the invisible watermark) and which generation they name. A binary field is
 * streamed from n8n's binary store as the multipart part `file`, exactly as an upload sends it; a
 * URL (fetched by the service) or base64 goes as JSON `image`. A binary or base64 file is checked to
 * be an image from its own bytes before anything is sent. Nothing is stored or charged, so a
 * repeated request is harmless and carries no idempotency key.
 */
import type { IExecuteFunctions, INodeExecutionData, JsonObject } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { IMAGE_TYPES, sniffMedia, type SniffedMedia } from '../../core/media';
import { readBinaryInput, readHead } from '../shared/binary-input';
import { base64Parameter, urlParameter } from './source-parameters';
import { StreamedMultipartBody } from '../shared/multipart';
import { readRequestSettings } from '../shared/request-options';
import { callApi, type ApiCall } from '../shared/transport';
import { readVerifyAnswer } from './verify-answer';

type InputType = 'binary' | 'url' | 'base64';

const INPUT_TYPES: readonly InputType[] = ['binary', 'url', 'base64'];
const VERIFY_PATH = '/provenance/verify';

/** What is sent for one item, and the node parameter behind the field that carries the image. */
interface VerifyRequest {
	body: ApiCall['body'];
	parameterNames: Readonly<Record<string, string>>;
}

export async function verifyForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const inputType = context.getNodeParameter('inputType', itemIndex) as InputType;
	if (!INPUT_TYPES.includes(inputType)) {
		throw new NodeOperationError(
			context.getNode(),
			`Parameter 'inputType' of item ${itemIndex}: unknown input type ${JSON.stringify(inputType)}; use one of ${INPUT_TYPES.join(', ')}`,
			{ itemIndex, description: 'The request was not sent: choose Binary File, URL or Base64 as the input type.' },
		);
	}
	const request = await { binary: binaryRequest, url: urlRequest, base64: base64Request }[inputType](context, itemIndex);
	const answer = await callApi<unknown>(context, {
		method: 'POST',
		path: VERIFY_PATH,
		body: request.body,
		itemIndex,
		parameterNames: request.parameterNames,
		...readRequestSettings(context, itemIndex),
	}).catch((error: unknown) => {
		throw withoutRoute(context, error, itemIndex);
	});
	return [{ json: readVerifyAnswer(context, itemIndex, answer) }];
}

async function binaryRequest(context: IExecuteFunctions, itemIndex: number): Promise<VerifyRequest> {
	const propertyName = context.getNodeParameter('binaryPropertyName', itemIndex) as string;
	const input = await readBinaryInput(context, itemIndex, propertyName);
	checkImage(context, itemIndex, sniffMedia(await readHead(input)), 'binaryPropertyName', `the binary field '${propertyName}'`, input.mimeType);
	return {
		// Opened anew for every attempt, so a retry streams the file again from the store.
		body: async () => new StreamedMultipartBody({ field: 'file', fileName: input.fileName, contentType: input.mimeType, size: input.size, content: await input.open() }),
		parameterNames: { file: 'binaryPropertyName' },
	};
}

async function urlRequest(context: IExecuteFunctions, itemIndex: number): Promise<VerifyRequest> {
	const url = urlParameter(context, itemIndex);
	return { body: () => ({ image: url }), parameterNames: { image: 'url' } };
}

async function base64Request(context: IExecuteFunctions, itemIndex: number): Promise<VerifyRequest> {
	const { value, media } = base64Parameter(context, itemIndex);
	checkImage(context, itemIndex, media, 'base64', 'the base64 content');
	return { body: () => ({ image: value }), parameterNames: { image: 'base64' } };
}

/** Nothing but an image is sent: the service answers anything else with a 400, after taking it all in. */
function checkImage(context: IExecuteFunctions, itemIndex: number, media: SniffedMedia | null, parameter: string, source: string, declaredMimeType?: string): void {
	if (media?.kind === 'image') return;
	const holds = media
		? `holds ${media.mimeType}, not an image`
		: `holds no supported image (${IMAGE_TYPES.join(', ')})${declaredMimeType ? `; it is declared as ${declaredMimeType}` : ''}`;
	throw new NodeOperationError(context.getNode(), `Parameter '${parameter}' of item ${itemIndex}: ${source} ${holds}`, {
		itemIndex,
		description: 'The request was not sent: Verify checks images; pass the image itself.',
	});
}

/**
 * A 404 comes from a service without the route (an imagegen-server older than it, or another API
 * behind the Base URL): the route itself refuses an image with a 400 or a 413, never a 404.
 */
function withoutRoute(context: IExecuteFunctions, error: unknown, itemIndex: number): unknown {
	if (!(error instanceof NodeApiError) || error.httpCode !== '404') return error;
	return new NodeApiError(context.getNode(), (error.errorResponse ?? {}) as JsonObject, {
		message: `The ImageGen API at this Base URL has no provenance check: POST ${VERIFY_PATH} answered HTTP 404 (${error.message})`,
		description: 'Update imagegen-server to a version that offers POST /v1/provenance/verify, or check the Base URL of the ImageGen API credential.',
		httpCode: '404',
		itemIndex,
	});
}
