/**
 * One input item through the ImageGen node's Generate operation, in one straight path: resolve
 * every input (uploading binaries too large to inline) → build the request → validate it once →
 * submit it as a job → wait for it (Wait for Result "Wait") or hand the job on ("Submit").
 * A video model takes its own path (video.ts).
 */
import type { IDataObject, IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';

import { MODELS, type ModelId } from '../../core/models';
import { toGenerationBody, type GenerationParameters } from '../../core/request';
import { parseGenerationRequest, type GenerationRequest } from '../../core/schemas';
import { isVideoModelId } from '../../core/video-models';
import { readGenerationAnswer } from '../shared/answers';
import { idempotencyKey } from '../shared/idempotency';
import { toNodeError, validated } from '../shared/items';
import { readRequestSettings } from '../shared/request-options';
import { serviceTypeOf } from '../shared/service-type';
import { runsAsTool } from '../shared/tool-mode';
import type { ItemCall } from '../shared/uploads';
import { deleteUploads, imagesEntry, resolveImage, type ImageSourceParameter, type ResolvedImage } from './image-inputs';
import { readJobOptions, type JobOptions, type JobOptionValues } from './job-options';
import { toOutputItems, toolItems, type GenerationSubject, type ImageOutputOptions } from './image-output';
import { generationFailure, submitGeneration, waitForGeneration } from './jobs';
import { generateWithOpenAi } from './openai-generate';
import { generateVideoForItem } from './video';

interface ImageGenOptions extends ImageOutputOptions, JobOptionValues {
	inlineLimitMb?: number;
	seed?: number;
}

const MEGABYTE = 1024 * 1024;
/** The node parameter behind each request field that core's generation parameters do not name. */
const FIELD_PARAMETERS = { webhook_url: 'webhookUrl' } as const;

export async function generateForItem(context: IExecuteFunctions, itemIndex: number): Promise<INodeExecutionData[]> {
	if (isVideoModelId(context.getNodeParameter('model', itemIndex))) return await generateVideoForItem(context, itemIndex);
	if ((await serviceTypeOf(context, itemIndex)) === 'openai') return await generateWithOpenAi(context, itemIndex);
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
	let jobOptions: JobOptions;
	try {
		jobOptions = readJobOptions(context, itemIndex, options);
		if (accepted.includes('images')) {
			const sources = (parameter('images', {}) as { image?: ImageSourceParameter[] }).image ?? [];
			const inlineLimitBytes = (options.inlineLimitMb ?? 4) * MEGABYTE;
			const resolved = await Promise.allSettled(sources.map(async (source, position) => await resolveImage(call, source, imagesEntry(position), inlineLimitBytes)));
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

	// Added after validation: the request schema of services before jobs refuses fields it does not know.
	const body: IDataObject = { ...request, ...(jobOptions.webhookUrl ? { webhook_url: jobOptions.webhookUrl } : {}) };
	const jobCall = { context, itemIndex, settings: call.settings };
	const submitted = await submitGeneration(jobCall, body, { 'Idempotency-Key': idempotencyKey(context, itemIndex, 'generation') }, FIELD_PARAMETERS);
	let response: unknown;
	if ('answer' in submitted) {
		// A service without jobs answered with the image itself, whichever mode was asked for.
		response = submitted.answer;
	} else if (jobOptions.waitForResult === 'submit') {
		return [{ json: submitted.job.body }];
	} else {
		const job = await waitForGeneration(jobCall, submitted, jobOptions.maxWaitSeconds);
		if (job.status !== 'succeeded') throw generationFailure(jobCall, job, FIELD_PARAMETERS);
		response = job.result;
	}
	const answer = readGenerationAnswer(context, itemIndex, response);
	const subject: GenerationSubject = { model: request.model, prompt: request.prompt, outputFormat: request.output_format };
	if (asTool) return toolItems(subject, answer);
	return await toOutputItems(context, itemIndex, subject, answer, options, call.settings);
}
