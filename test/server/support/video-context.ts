/**
 * A checked p-video request and the context a video provider runs in, as the runner would give
 * them, with what the provider told it recorded: the job ids, in order with the host's calls, and
 * the progress.
 */
import { readFile } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { parseVideoRequest } from '../../../core/video-schemas';
import { videoDimensions } from '../../../core/video-models';
import type { HostJobRef } from '../../../server/src/generation/provider';
import type { ProviderVideo, SettledVideoRequest, VideoContext, VideoInputField } from '../../../server/src/video/video-provider';

export function settledVideo(fields: Record<string, unknown> = {}, seed = 42): SettledVideoRequest {
	const request = parseVideoRequest({ model: 'p-video', prompt: 'A paper boat on a rainy street', ...fields });
	return { ...request, seed, ...videoDimensions(request.aspect_ratio, request.resolution) };
}

export interface RecordingContext extends VideoContext {
	jobs: HostJobRef[];
	/** The job ids the provider named, kept or not (what the trace is told). */
	named: HostJobRef[];
	/** How many calls the host had received when each job id was told. */
	callsWhenTold: number[];
	percents: number[];
	controller: AbortController;
}

/** A context whose inputs are `inputs`; `hostCalls` counts the host's calls so far. */
export function videoContext(hostCalls: () => number, inputs: Partial<Record<VideoInputField, Buffer>> = {}, deadline?: number): RecordingContext {
	const controller = new AbortController();
	const context: RecordingContext = {
		controller,
		signal: controller.signal,
		deadline,
		workDir: '/nonexistent',
		jobs: [],
		named: [],
		callsWhenTold: [],
		percents: [],
		loadInput: async (field) => inputs[field] ?? Promise.reject(new Error(`no ${field} in this test`)),
		hostJobStarted: async (job) => {
			context.jobs.push(job);
			context.callsWhenTold.push(hostCalls());
		},
		hostJobNamed: (job) => context.named.push(job),
		progress: (percent) => context.percents.push(percent),
	};
	return context;
}

export async function streamBytes(stream: Readable): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const chunk of stream) chunks.push(chunk as Buffer);
	return Buffer.concat(chunks);
}

/** The bytes of a `{ stream }` answer; fails the test for any other kind. */
export async function deliveredBytes(video: ProviderVideo): Promise<Buffer> {
	if (!('stream' in video)) throw new Error(`expected a stream, got ${JSON.stringify(video)}`);
	return await streamBytes(video.stream);
}

export const fileBytes = (path: string) => readFile(path);
