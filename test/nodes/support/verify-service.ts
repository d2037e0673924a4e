/**
 * A loopback stand-in of `POST /v1/provenance/verify` as the service contract states it (DESIGN,
 * "Marks that survive"): any API key (a bearer token, else 401); the image as the multipart part
 * `file`, or as JSON `{ "image" }` holding an http(s) URL it fetches, a data URI or base64, as
 * uploads take them; bytes that do not decode as an image refused with a 400 naming the field. The
 * answer `{ c2pa, watermark, generation }` is the one a test gave those exact bytes (`mark`), else
 * an unmarked image's, so an answer only comes back for the bytes the node really sent. Every call
 * is recorded with its parsed form or JSON and the digest of the image it carried; `failNext`
 * answers the next calls with a fault instead.
 */
import { createHash } from 'node:crypto';
import sharp from 'sharp';

import { startRecordingServer, type RecordedCall } from '../../server/support/recording-server';

export interface VerifyAnswer {
	c2pa: { present: boolean; valid: boolean | null; signer: string | null; digital_source_type: string | null };
	watermark: { found: boolean; algorithm: string | null; payload: string | null };
	generation: { id: string | null; model: string; created_at: string } | null;
}

export const UNMARKED: VerifyAnswer = {
	c2pa: { present: false, valid: false, signer: null, digital_source_type: null },
	watermark: { found: false, algorithm: null, payload: null },
	generation: null,
};

export interface VerifyCall extends RecordedCall {
	/** The multipart parts: text values, and files as `{ fileName, type, size }`. */
	form?: Array<[string, string | { fileName: string; type: string; size: number }]>;
	/** The SHA-256 of the image the call carried, once read (and fetched, for a URL). */
	imageSha256?: string;
}

export interface VerifyService {
	/** origin + /v1, as a credential's Base URL. */
	baseUrl: string;
	calls: VerifyCall[];
	/** What the service answers for an image of exactly these bytes. */
	mark(bytes: Buffer, answer: VerifyAnswer): void;
	/** The next `count` calls are answered with this status and body, whatever they carry. */
	failNext(status: number, body: unknown, count?: number): void;
	reset(): void;
	close(): Promise<void>;
}

const ROUTE = '/v1/provenance/verify';

class Refusal extends Error {
	constructor(
		readonly status: number,
		message: string,
		readonly param: string | null,
		readonly code: string,
	) {
		super(message);
	}

	get body() {
		const type = { 400: 'invalid_request_error', 401: 'authentication_error', 404: 'not_found_error', 415: 'invalid_request_error' }[this.status] ?? 'api_error';
		return { error: { message: this.message, type, param: this.param, code: this.code } };
	}
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

async function withForm(call: RecordedCall): Promise<VerifyCall> {
	const type = call.headers['content-type'] ?? '';
	if (!type.startsWith('multipart/form-data')) return call;
	const form = await new Request('http://stand-in', { method: 'POST', headers: { 'content-type': type }, body: call.body }).formData();
	return { ...call, form: [...form.entries()].map(([name, value]) => [name, typeof value === 'string' ? value : { fileName: value.name, type: value.type, size: value.size }]) };
}

/** The bytes of the one image a call carries, or the refusal the service answers. */
async function imageOf(call: VerifyCall): Promise<{ field: 'file' | 'image'; bytes: Buffer }> {
	const type = call.headers['content-type'] ?? '';
	if (type.startsWith('multipart/form-data')) {
		const form = await new Request('http://stand-in', { method: 'POST', headers: { 'content-type': type }, body: call.body }).formData();
		const other = [...form.keys()].find((name) => name !== 'file');
		if (other !== undefined) throw new Refusal(400, `Unknown field '${other}': send the image in the part 'file'`, other, 'unknown_field');
		const files = form.getAll('file');
		const file = files[0];
		if (files.length !== 1 || typeof file === 'string' || file === undefined) throw new Refusal(400, "The multipart form needs one part 'file' holding the image", 'file', 'missing_field');
		return { field: 'file', bytes: Buffer.from(await file.arrayBuffer()) };
	}
	if (!type.includes('json')) throw new Refusal(415, 'Send the image as multipart/form-data or as JSON', null, 'unsupported_content_type');
	const body = (call.json ?? {}) as Record<string, unknown>;
	const other = Object.keys(body).find((name) => name !== 'image');
	if (other !== undefined) throw new Refusal(400, `Unknown field '${other}': send only 'image'`, other, 'unknown_field');
	if (typeof body.image !== 'string' || body.image === '') throw new Refusal(400, "'image' is required: an http(s) URL, a data URI or base64 data", 'image', 'missing_field');
	return { field: 'image', bytes: await referencedBytes(body.image) };
}

async function referencedBytes(value: string): Promise<Buffer> {
	if (/^https?:\/\//i.test(value)) {
		const response = await fetch(value).catch(() => undefined);
		if (!response?.ok) throw new Refusal(400, `Fetching 'image' failed: ${response ? `HTTP ${response.status}` : 'no answer'}`, 'image', 'fetch_failed');
		return Buffer.from(await response.arrayBuffer());
	}
	const base64 = value.replace(/^data:[^,;]+;base64,/, '');
	if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) throw new Refusal(400, "'image' is neither an http(s) URL, a data URI nor valid base64", 'image', 'invalid_value');
	return Buffer.from(base64, 'base64');
}

/** Decoded whole, as a detector that reads the pixels must: a valid header alone is not an image. */
async function checkDecodes(field: string, bytes: Buffer): Promise<void> {
	try {
		await sharp(bytes).raw().toBuffer();
	} catch {
		throw new Refusal(400, `'${field}' could not be read as an image`, field, 'undecodable_image');
	}
}

export async function startVerifyService(): Promise<VerifyService> {
	const marks = new Map<string, VerifyAnswer>();
	const faults: Array<{ status: number; body: unknown }> = [];
	const answer = async (call: VerifyCall): Promise<{ status: number; body: unknown }> => {
		if (call.method !== 'POST' || call.path !== ROUTE) throw new Refusal(404, `Unknown route: ${call.method} ${call.path}`, null, 'unknown_route');
		if (!/^Bearer \S+$/.test(call.headers.authorization ?? '')) throw new Refusal(401, 'Missing API key: send Authorization: Bearer <key>', null, 'missing_api_key');
		const { field, bytes } = await imageOf(call);
		call.imageSha256 = sha256(bytes);
		await checkDecodes(field, bytes);
		return { status: 200, body: marks.get(call.imageSha256) ?? UNMARKED };
	};
	const recorder = await startRecordingServer<VerifyCall>((call, response) => {
		const send = ({ status, body }: { status: number; body: unknown }): void => void response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
		const fault = faults.shift();
		if (fault) return send(fault);
		void answer(call).then(send, (error: unknown) => {
			if (error instanceof Refusal) send({ status: error.status, body: error.body });
			else send({ status: 500, body: { error: { message: String(error), type: 'api_error', param: null, code: 'internal_error' } } });
		});
	}, withForm);
	return {
		baseUrl: `${recorder.origin}/v1`,
		calls: recorder.calls,
		mark: (bytes, marked) => void marks.set(sha256(bytes), marked),
		failNext(status, body, count = 1) {
			for (let index = 0; index < count; index++) faults.push({ status, body });
		},
		reset() {
			recorder.calls.length = 0;
			faults.length = 0;
		},
		close: recorder.close,
	};
}
