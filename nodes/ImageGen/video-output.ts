/**
 * A completed video as the output item: `json` describing it and, unless told not to, the MP4 as
 * binary. The MP4 is streamed from `GET /videos/<id>/content` into n8n's binary data store (a file
 * in n8n's default filesystem mode), so a video is never held whole in the node's memory.
 */
import type { IBinaryData, IDataObject, IExecuteFunctions, IN8nHttpFullResponse, INodeExecutionData, JsonObject } from 'n8n-workflow';
import { NodeApiError } from 'n8n-workflow';

import { isApiErrorBody } from '../../core/errors';
import { CREDENTIAL_TYPE } from '../shared/transport';
import type { RequestSettings } from '../shared/uploads';
import type { ImageOutputOptions } from './image-output';
import { videoPath, type Video } from './video-jobs';

/** The stream n8n's binary helpers take (a Node.js Readable), named through them: community nodes import no Node modules. */
type Readable = Exclude<Parameters<IExecuteFunctions['helpers']['prepareBinaryData']>[0], Buffer>;

const MP4 = 'video/mp4';
// An error answer is read for its message only; anything beyond this is not a message.
const ERROR_BODY_BYTES = 64 * 1024;

/** What describes a video in the output item, from the Video object (only the fields it has). */
export function videoJson(video: Video): IDataObject {
	const body = video.body;
	const json: IDataObject = { id: video.id, model: body.model, status: video.status };
	for (const field of ['prompt', 'seconds', 'size', 'url'] as const) if (body[field] !== undefined && body[field] !== null) json[field] = body[field];
	if (typeof body.expires_at === 'number') json.expiresAt = new Date(body.expires_at * 1000).toISOString();
	if (typeof body.usage === 'object' && body.usage !== null) json.usage = body.usage;
	return json;
}

export async function toVideoItems(context: IExecuteFunctions, itemIndex: number, video: Video, options: ImageOutputOptions, settings: RequestSettings): Promise<INodeExecutionData[]> {
	const json = videoJson(video);
	if (options.download === false) return [{ json }];
	const created = typeof video.body.created_at === 'number' ? new Date(video.body.created_at * 1000) : new Date();
	const fileName = `${String(video.body.model ?? 'video')}-${created.toISOString().replace(/[:.]/g, '-')}.mp4`;
	const stream = await openContent(context, itemIndex, video.id, settings);
	let binary: IBinaryData;
	try {
		binary = await context.helpers.prepareBinaryData(stream, fileName, MP4);
	} catch (error) {
		stream.destroy();
		throw new NodeApiError(context.getNode(), { message: (error as Error).message }, {
			message: `Video ${video.id} was made but its download broke off: ${(error as Error).message}`,
			description: `Run the node again with the operation Get Generation and ID ${video.id}, or turn off the option "Download Image or Video" to keep only the hosted URL.`,
			itemIndex,
		});
	}
	return [{ json: { ...json, fileName, mimeType: MP4, ...(binary.bytes !== undefined ? { sizeBytes: binary.bytes } : {}) }, binary: { [options.binaryPropertyName || 'data']: binary } }];
}

/** The MP4 as a stream, after its answer's status and type were checked. */
async function openContent(context: IExecuteFunctions, itemIndex: number, id: string, settings: RequestSettings): Promise<Readable> {
	const credentials = await context.getCredentials<{ baseUrl?: string }>(CREDENTIAL_TYPE, itemIndex);
	const url = `${String(credentials.baseUrl ?? '').replace(/\/+$/, '')}${videoPath(id)}/content`;
	let response: IN8nHttpFullResponse;
	try {
		response = (await context.helpers.httpRequestWithAuthentication.call(context, CREDENTIAL_TYPE, {
			method: 'GET',
			url,
			encoding: 'stream',
			timeout: settings.timeoutMs,
			returnFullResponse: true,
			ignoreHttpStatusErrors: true,
		})) as IN8nHttpFullResponse;
	} catch (error) {
		throw new NodeApiError(context.getNode(), { message: (error as Error).message }, {
			message: `Video ${id} was made but could not be downloaded from ${url}: ${(error as Error).message}`,
			itemIndex,
		});
	}
	const stream = response.body as Readable;
	const type = String(response.headers['content-type'] ?? '');
	if (response.statusCode === 200 && type.split(';')[0]!.trim() === MP4) return stream;
	const text = await readSome(stream);
	const body = parseJson(text);
	const message = isApiErrorBody(body) ? body.error.message : `HTTP ${response.statusCode} with ${type || 'no content type'} instead of an MP4`;
	throw new NodeApiError(context.getNode(), (isApiErrorBody(body) ? body : { body: text }) as unknown as JsonObject, {
		message: `Video ${id} could not be downloaded: ${message}`,
		httpCode: String(response.statusCode),
		itemIndex,
	});
}

/** The first bytes of an answer as text; the rest is discarded. */
async function readSome(stream: Readable): Promise<string> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of stream) {
		chunks.push(Buffer.from(chunk as Buffer));
		size += (chunk as Buffer).length;
		if (size >= ERROR_BODY_BYTES) break;
	}
	stream.destroy();
	return Buffer.concat(chunks).subarray(0, ERROR_BODY_BYTES).toString('utf8');
}

function parseJson(text: string): unknown {
	try {
		return JSON.parse(text);
	} catch {
		return undefined;
	}
}
