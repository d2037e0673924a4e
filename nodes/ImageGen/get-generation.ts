/**
 * The Get Generation operation: a generation named by its id, as the service keeps it. One that
 * succeeded becomes the image items a synchronous Generate gives (the prompt is not part of a
 * generation, so it is not in them), or for a video (`video_…`) the item a waited Generate gives;
 * any other is output as the generation object, as it is.
 */
import type { IExecuteFunctions, INodeExecutionData, INodeProperties } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { readGenerationAnswer } from '../shared/answers';
import { readRequestSettings } from '../shared/request-options';
import { runsAsTool } from '../shared/tool-mode';
import { toOutputItems, toolItems, type GenerationSubject, type ImageOutputOptions } from './image-output';
import { fetchGeneration } from './jobs';
import { fetchVideo } from './video-jobs';
import { toVideoItems, videoJson } from './video-output';

export const getGenerationProperties: INodeProperties[] = [
	{
		displayName: 'Generation ID',
		name: 'generationId',
		type: 'string',
		required: true,
		default: '',
		placeholder: 'e.g. gen_abc123 or video_abc123',
		description: 'The ID of a generation or video, e.g. the "ID" a Generate with Wait for Result "Submit" output; only the API key that made it can fetch it',
		displayOptions: { show: { operation: ['getGeneration'] } },
	},
];

export async function getGenerationForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	const id = String(context.getNodeParameter('generationId', itemIndex, '')).trim();
	if (!id) {
		throw new NodeOperationError(context.getNode(), `Parameter 'generationId' of item ${itemIndex}: 'generationId' is empty`, {
			itemIndex,
			description: 'Give the id of a generation, e.g. {{ $json.id }} after a Generate with Wait for Result "Submit".',
		});
	}
	const asTool = runsAsTool(context);
	const options = context.getNodeParameter('options', itemIndex, {}) as ImageOutputOptions;
	const settings = readRequestSettings(context, itemIndex);
	const { job } = await fetchGeneration({ context, itemIndex, settings }, id, 'generationId');
	if (job.status !== 'succeeded') return [{ json: job.body }];
	if (isVideoResult(job.result)) {
		// The generation keeps the hosted MP4 and its cost; the Video object describes it as a waited run does.
		const { video } = await fetchVideo({ context, itemIndex, settings }, job.id);
		if (asTool) return [{ json: videoJson(video) }];
		return await toVideoItems(context, itemIndex, video, options, settings);
	}
	if (job.result === null || job.result === undefined) {
		throw new NodeOperationError(context.getNode(), `Generation '${id}' succeeded, but its images are not kept`, {
			itemIndex,
			description:
				"A synchronous generation answered with inline images (Response Format 'b64_json') keeps them only when it was made with an Idempotency-Key or a Webhook URL. Use the images from that run's own output, or generate again.",
		});
	}

	const answer = readGenerationAnswer(context, itemIndex, job.result);
	const subject: GenerationSubject = { model: answer.model ?? String(job.body.model ?? '') };
	if (asTool) return toolItems(subject, answer);
	return await toOutputItems(context, itemIndex, subject, answer, options, settings);
}

/** A video's generation keeps a `video.result` (its hosted MP4, still, length and cost) as its result. */
function isVideoResult(result: unknown): boolean {
	return typeof result === 'object' && result !== null && (result as { object?: unknown }).object === 'video.result';
}
