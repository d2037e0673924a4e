/**
 * A loopback stand-in of another server with this API's videos routes (another imagegen-server;
 * OpenAI's videos API plus our cancel), as docs and core/video-schemas.ts publish them: POST
 * /v1/videos (JSON checked by the same rules, a 400 naming the field) answers the Video object
 * `{ id, object: "video", model, status: "queued", progress, … }`; GET /v1/videos/{id} goes
 * `queued`, `in_progress` with rising `progress` for the polls set, then `completed` (or `failed`
 * with `error`); GET /v1/videos/{id}/content is the MP4; POST /v1/videos/{id}/cancel ends it as
 * failed, or answers 404 when the host has no such route (OpenAI's own API). 401 without the key.
 */
import type http from 'node:http';
import { ImageGenError } from '../../../core/errors';
import { parseVideoRequest } from '../../../core/video-schemas';
import { videoDimensions } from '../../../core/video-models';
import { scriptedAnswers, startRecordingServer, type RecordedCall } from './recording-server';
import { sendJson, sendScripted, sendMp4, type VideoHostScript } from './video-hosts';

export interface UpstreamVideoHost {
	origin: string;
	calls: RecordedCall[];
	callsTo(method: string, pathPrefix: string): RecordedCall[];
	script(method: string, pathPrefix: string, answer: VideoHostScript, count?: number): void;
	/** Polls that answer `queued`/`in_progress` before a video ends (at least 1). */
	setPendingPolls(count: number): void;
	setOutcome(outcome: 'completed' | 'failed'): void;
	/** Whether POST /v1/videos/{id}/cancel exists (ours) or answers 404 (OpenAI's). */
	setCancelRoute(exists: boolean): void;
	statusOf(id: string): string | undefined;
	videosMade(): string[];
	close(): Promise<void>;
}

export const UPSTREAM_KEY = 'upstream-video-key';

interface Video {
	id: string;
	object: 'video';
	model: string;
	status: 'queued' | 'in_progress' | 'completed' | 'failed';
	progress: number;
	created_at: number;
	completed_at: number | null;
	expires_at: number | null;
	seconds: string;
	size: string;
	prompt: string;
	error: { code: string; message: string } | null;
}

export async function startUpstreamVideoHost(mp4: string): Promise<UpstreamVideoHost> {
	const scripts = scriptedAnswers<VideoHostScript>();
	const videos = new Map<string, { video: Video; polls: number; left: number; outcome: 'completed' | 'failed' }>();
	let pendingPolls = 1;
	let outcome: 'completed' | 'failed' = 'completed';
	let cancelRoute = true;
	let nextId = 1;

	const recorder = await startRecordingServer((call, response) => {
		if (call.headers.authorization !== `Bearer ${UPSTREAM_KEY}`) {
			return sendJson(response, 401, new ImageGenError(401, 'Invalid API key', { code: 'invalid_api_key' }).toBody());
		}
		const answer = scripts.take(call);
		if (!answer) return route(call, response);
		if (answer.afterMaking) create(call.json);
		sendScripted(response, answer);
	});

	function create(body: unknown): Video {
		const request = parseVideoRequest(body);
		const { width, height } = videoDimensions(request.aspect_ratio, request.resolution);
		const video: Video = {
			id: `video_${String(nextId++).padStart(6, '0')}`,
			object: 'video',
			model: request.model,
			status: 'queued',
			progress: 0,
			created_at: Math.floor(Date.now() / 1000),
			completed_at: null,
			expires_at: null,
			seconds: String(request.seconds),
			size: `${width}x${height}`,
			prompt: request.prompt,
			error: null,
		};
		videos.set(video.id, { video, polls: pendingPolls, left: pendingPolls, outcome });
		return video;
	}

	function advance(state: { video: Video; polls: number; left: number; outcome: 'completed' | 'failed' }): void {
		const { video } = state;
		if (video.status === 'completed' || video.status === 'failed') return;
		state.left--;
		if (state.left > 0) {
			video.status = 'in_progress';
			video.progress = Math.round((100 * (state.polls - state.left)) / state.polls);
			return;
		}
		video.status = state.outcome;
		video.completed_at = Math.floor(Date.now() / 1000);
		if (state.outcome === 'completed') video.progress = 100;
		else video.error = { code: 'upstream_failed', message: 'The pruna provider failed: The prompt was flagged' };
	}

	function route(call: RecordedCall, response: http.ServerResponse): void {
		const { method, path } = call;
		if (method === 'POST' && path === '/v1/videos') {
			try {
				return sendJson(response, 200, create(call.json));
			} catch (error) {
				if (error instanceof ImageGenError) return sendJson(response, error.status, error.toBody());
				throw error;
			}
		}
		const match = /^\/v1\/videos\/(video_\d+)(\/content|\/cancel)?$/.exec(path);
		const state = match ? videos.get(match[1]!) : undefined;
		if (!match || !state || (match[2] === '/cancel' && !cancelRoute)) return sendJson(response, 404, new ImageGenError(404, `No video ${match?.[1] ?? path}`, { code: 'not_found' }).toBody());
		if (method === 'GET' && !match[2]) {
			advance(state);
			return sendJson(response, 200, state.video);
		}
		if (method === 'GET' && match[2] === '/content') {
			if (state.video.status !== 'completed') return sendJson(response, 404, new ImageGenError(404, `Video ${state.video.id} is not completed`, { code: 'video_not_ready' }).toBody());
			return void sendMp4(response, mp4);
		}
		if (method === 'POST' && match[2] === '/cancel') {
			if (state.video.status === 'queued' || state.video.status === 'in_progress') {
				state.video.status = 'failed';
				state.video.error = { code: 'canceled', message: 'The video was canceled' };
			}
			return sendJson(response, 200, state.video);
		}
		sendJson(response, 404, new ImageGenError(404, `No route for ${method} ${path}`, { code: 'not_found' }).toBody());
	}

	return {
		origin: recorder.origin,
		calls: recorder.calls,
		callsTo: recorder.callsTo,
		script: scripts.add,
		setPendingPolls: (count) => (pendingPolls = Math.max(1, count)),
		setOutcome: (next) => (outcome = next),
		setCancelRoute: (exists) => (cancelRoute = exists),
		statusOf: (id) => videos.get(id)?.video.status,
		videosMade: () => [...videos.keys()],
		close: () => recorder.close(),
	};
}
