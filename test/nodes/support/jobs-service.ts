/**
 * A loopback stand-in for the service's generation jobs, for the node suites until the service
 * itself answers them; delete it then and point the suites at the real service. It follows the
 * jobs contract of the HTTP API exactly:
 * - `POST /v1/images/generations` with `Prefer: respond-async` → 202, `Location:
 *   /v1/generations/<id>`, `Preference-Applied: respond-async`, the generation object (`queued`);
 *   without the header → 200 with the image answer, as a synchronous call;
 * - `GET /v1/generations/<id>` → the object; `POST /v1/generations/<id>/cancel` → the object,
 *   `canceled` unless it had already ended; `GET /v1/generations?status=&limit=` → a list, newest
 *   first; an unknown id → 404 `generation_not_found`, in the API's error shape.
 * Each test plans the jobs made from then on: the states successive GETs see, how one fails, a
 * Retry-After. With `knowsJobs(false)` it is a service from before jobs: the header is ignored.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

import { makeImage } from '../../server/support/media';

export type GenerationStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'canceled';

export interface ApiErrorFields {
	message: string;
	type: string;
	param: string | null;
	code: string;
}

export interface JobPlan {
	/** What each GET after the submit sees, one entry per GET; the last one stays. */
	states: GenerationStatus[];
	/** The error of a job that ends `failed`. */
	error: ApiErrorFields;
	/** Sent with the 202 and with every answer about an unfinished job. */
	retryAfterSeconds?: number;
	/**
	 * What a cancel of an unfinished job meets: by default it cancels; `succeeded` or `failed`, a
	 * job that ended while the cancel was on its way; `refused`, a 500.
	 */
	onCancel?: 'succeeded' | 'failed' | 'refused';
}

/** The plan for the jobs made from now on, or one per request. */
export type JobPlanning = Partial<JobPlan> | ((request: Record<string, unknown>) => Partial<JobPlan>);

export interface GenerationObject {
	object: 'generation';
	id: string;
	status: GenerationStatus;
	model: string;
	created: number;
	finished_at: number | null;
	result: Record<string, unknown> | null;
	error: ApiErrorFields | null;
}

export interface JobsRequest {
	method: string;
	path: string;
	at: number;
	headers: http.IncomingHttpHeaders;
	body: string;
}

export interface JobsService {
	/** origin + /v1, as a credential's Base URL. */
	baseUrl: string;
	origin: string;
	apiKey: string;
	requests: JobsRequest[];
	/** The jobs made from now on follow this plan. */
	plan(plan: JobPlanning): void;
	/** false: a service from before jobs, which answers every generation synchronously. */
	knowsJobs(known: boolean): void;
	/** A job as the service keeps it now. */
	job(id: string): GenerationObject | undefined;
	/** A job made directly (for fetching) in a state it keeps, from a request body as the node would send it. */
	addJob(request: Record<string, unknown>, status: GenerationStatus): GenerationObject;
	/** Forgets the requests, the jobs and the plan. */
	reset(): void;
	close(): Promise<void>;
}

const DEFAULT_PLAN: JobPlan = {
	states: ['succeeded'],
	error: { message: 'The model host refused the prompt', type: 'invalid_request_error', param: 'prompt', code: 'content_policy_violation' },
};
// One fixed creation time: two runs of one request give items that differ only in their URLs.
const CREATED = 1_764_000_000;
const FINAL: readonly GenerationStatus[] = ['succeeded', 'failed', 'canceled'];
const EXTENSIONS: Record<string, string> = { png: 'png', jpeg: 'jpg', webp: 'webp' };

interface StoredJob {
	generation: GenerationObject;
	request: Record<string, unknown>;
	plan: JobPlan;
	polls: number;
}

export async function startJobsService(): Promise<JobsService> {
	const images = { png: await makeImage('png', 64, 48), jpeg: await makeImage('jpeg', 64, 48), webp: await makeImage('webp', 64, 48) };
	const apiKey = 'jobs-stand-in-key';
	const requests: JobsRequest[] = [];
	const jobs = new Map<string, StoredJob>();
	const files = new Map<string, { bytes: Buffer; contentType: string }>();
	let planning: JobPlanning = {};
	const planFor = (request: Record<string, unknown>): JobPlan => ({ ...DEFAULT_PLAN, ...(typeof planning === 'function' ? planning(request) : planning) });
	let knowsJobs = true;
	let sequence = 0;
	let origin = '';

	/** The body a synchronous call answers, with the image hosted here or inline as the request asked. */
	function resultFor(id: string, request: Record<string, unknown>): Record<string, unknown> {
		const format = (typeof request.output_format === 'string' && request.output_format in images ? request.output_format : 'png') as keyof typeof images;
		const bytes = images[format];
		const image =
			request.response_format === 'b64_json'
				? { b64_json: bytes.toString('base64'), seed: 42 }
				: { url: hostFile(`/files/${id}.${EXTENSIONS[format]}`, bytes, `image/${format}`), expires_at: '2030-01-01T00:00:00.000Z', seed: 42 };
		return { created: CREATED, model: request.model, output_format: format, data: [image], usage: { images: 1, cost_usd: 0.005 } };
	}

	function hostFile(path: string, bytes: Buffer, contentType: string): string {
		files.set(path, { bytes, contentType });
		return `${origin}${path}`;
	}

	function end(job: StoredJob, status: GenerationStatus): void {
		const { generation } = job;
		generation.status = status;
		if (!FINAL.includes(status)) return;
		generation.finished_at = CREATED + 5;
		if (status === 'succeeded') generation.result = resultFor(generation.id, job.request);
		if (status === 'failed') generation.error = job.plan.error;
	}

	function create(request: Record<string, unknown>, status: GenerationStatus, plan: JobPlan = planFor(request)): StoredJob {
		const id = `gen_${String(++sequence).padStart(6, '0')}`;
		const job: StoredJob = {
			generation: { object: 'generation', id, status: 'queued', model: String(request.model), created: CREATED, finished_at: null, result: null, error: null },
			request,
			plan,
			polls: 0,
		};
		end(job, status);
		jobs.set(id, job);
		return job;
	}

	const server = http.createServer((request, response) => {
		const chunks: Buffer[] = [];
		request.on('data', (chunk: Buffer) => chunks.push(chunk));
		request.on('end', () => {
			const body = Buffer.concat(chunks).toString('utf8');
			const url = new URL(request.url ?? '/', origin);
			const method = request.method ?? '';
			requests.push({ method, path: url.pathname + url.search, at: Date.now(), headers: request.headers, body });
			const send = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
				response.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
			const fail = (status: number, error: ApiErrorFields) => send(status, { error });
			const waitHeaders = (job: StoredJob): Record<string, string> =>
				!FINAL.includes(job.generation.status) && job.plan.retryAfterSeconds !== undefined ? { 'retry-after': String(job.plan.retryAfterSeconds) } : {};

			const file = method === 'GET' ? files.get(url.pathname) : undefined;
			if (file) {
				response.writeHead(200, { 'content-type': file.contentType, 'content-length': file.bytes.length }).end(file.bytes);
				return;
			}
			if (request.headers.authorization !== `Bearer ${apiKey}`) {
				fail(401, { message: 'Invalid API key', type: 'authentication_error', param: null, code: 'invalid_api_key' });
				return;
			}
			if (method === 'POST' && url.pathname === '/v1/images/generations') {
				const generationRequest = JSON.parse(body) as Record<string, unknown>;
				const async = knowsJobs && /(^|[\s,;])respond-async($|[\s,;])/.test(String(request.headers.prefer ?? ''));
				if (!async) {
					send(200, create(generationRequest, 'succeeded').generation.result);
					return;
				}
				const job = create(generationRequest, 'queued');
				send(202, job.generation, { location: `/v1/generations/${job.generation.id}`, 'preference-applied': 'respond-async', ...waitHeaders(job) });
				return;
			}
			if (!knowsJobs) {
				fail(404, { message: `No route ${method} ${url.pathname}`, type: 'invalid_request_error', param: null, code: 'not_found' });
				return;
			}
			if (method === 'GET' && url.pathname === '/v1/generations') {
				const status = url.searchParams.get('status');
				const limit = Number(url.searchParams.get('limit') ?? 20);
				const data = [...jobs.values()].reverse().map((job) => job.generation).filter((generation) => !status || generation.status === status);
				send(200, { object: 'list', data: data.slice(0, limit) });
				return;
			}
			const match = /^\/v1\/generations\/([^/]+)(\/cancel)?$/.exec(url.pathname);
			const job = match ? jobs.get(decodeURIComponent(match[1]!)) : undefined;
			if (!match || (method === 'GET') === Boolean(match[2]) || (method !== 'GET' && method !== 'POST')) {
				fail(404, { message: `No route ${method} ${url.pathname}`, type: 'invalid_request_error', param: null, code: 'not_found' });
				return;
			}
			if (!job) {
				fail(404, { message: `No generation '${decodeURIComponent(match[1]!)}'`, type: 'invalid_request_error', param: null, code: 'generation_not_found' });
				return;
			}
			if (match[2]) {
				if (job.plan.onCancel === 'refused') {
					fail(500, { message: 'The cancel failed', type: 'server_error', param: null, code: 'internal_error' });
					return;
				}
				if (!FINAL.includes(job.generation.status)) end(job, job.plan.onCancel ?? 'canceled');
			} else if (!FINAL.includes(job.generation.status)) {
				const states = job.plan.states;
				end(job, states[Math.min(job.polls++, states.length - 1)]!);
			}
			send(200, job.generation, waitHeaders(job));
		});
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	return {
		baseUrl: `${origin}/v1`,
		origin,
		apiKey,
		requests,
		plan: (next) => (planning = next),
		knowsJobs: (known) => (knowsJobs = known),
		job: (id) => jobs.get(id)?.generation,
		// It stays as added: every GET sees the same state.
		addJob: (request, status) => create(request, status, { ...planFor(request), states: [status] }).generation,
		reset() {
			requests.length = 0;
			jobs.clear();
			files.clear();
			planning = {};
			sequence = 0;
			knowsJobs = true;
		},
		close: () =>
			new Promise<void>((resolve) => {
				server.closeAllConnections();
				server.close(() => resolve());
			}),
	};
}
