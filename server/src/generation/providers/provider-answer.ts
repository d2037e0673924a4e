/**
 * A model host's answer as undici's `request` gives it, read within a byte bound. Its body must
 * always be read or discarded: until then the connection is not returned to the pool.
 */
import type { Readable } from 'node:stream';
import type { Dispatcher } from 'undici';
import { ImageGenError } from '../../../../core/errors';
import { HOST_ERROR_BYTES } from './host-text';
import { ImageJsonReader, parseAnswer } from './image-json';

/**
 * The most any answer of a model host may carry: a JSON answer with a base64 image of about 48 MB.
 * Hosts are configured by the operator, not chosen by callers, but a broken one must not be able
 * to fill our memory.
 */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export class ProviderAnswer {
	constructor(
		private readonly provider: string,
		private readonly answer: Dispatcher.ResponseData,
		private readonly maxBytes = MAX_ANSWER_BYTES,
	) {
		// A body can fail before anyone reads it (its request's signal aborted: our time limit, our
		// client leaving). Its reader learns it from the read; unheard, the 'error' would end the process.
		answer.body.on('error', () => undefined);
	}

	get status(): number {
		return this.answer.statusCode;
	}

	get ok(): boolean {
		return this.status >= 200 && this.status <= 299;
	}

	/** A header's value (repeated ones joined as fetch does), or undefined. */
	header(name: string): string | undefined {
		const value = this.answer.headers[name.toLowerCase()];
		return Array.isArray(value) ? value.join(', ') : value;
	}

	async bytes(): Promise<Buffer> {
		const chunks: Buffer[] = [];
		let size = 0;
		for await (const chunk of this.chunks()) {
			chunks.push(chunk);
			size += chunk.length;
		}
		return chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
	}

	/** The answer as JSON; throws a NotJsonError when it is not. */
	async json(): Promise<unknown> {
		return parseAnswer(await this.text());
	}

	/** The answer as JSON, its base64 images decoded as they arrive (image-json.ts); throws a NotJsonError when it is not JSON. */
	async imageJson(): Promise<unknown> {
		const reader = new ImageJsonReader(this.declaredLength());
		for await (const chunk of this.chunks()) reader.write(chunk);
		return reader.end();
	}

	/**
	 * The body as it arrives, not bounded here: for a download whose reader bounds it by what it
	 * expects (a video, by --max-video-mb). Its reader must consume or destroy it.
	 */
	stream(): Readable {
		return this.answer.body;
	}

	async text(): Promise<string> {
		return (await this.bytes()).toString('utf8');
	}

	/**
	 * The start of an error answer, at most `maxBytes` of it, as text: its words are at its start,
	 * and the rest (a page of megabytes from a proxy, a dump) is dropped unread, its connection
	 * closed, rather than gathered only to be cut. A character cut at the bound is left out.
	 */
	async errorText(maxBytes = HOST_ERROR_BYTES): Promise<string> {
		const decoder = new TextDecoder();
		let text = '';
		let size = 0;
		for await (const chunk of this.answer.body) {
			const piece = (chunk as Buffer).subarray(0, maxBytes - size);
			size += piece.length;
			text += decoder.decode(piece, { stream: true });
			if (size >= maxBytes) {
				this.answer.body.destroy();
				break;
			}
		}
		return text;
	}

	/** Reads nothing more: a short rest is drained so the connection can be reused, a long one cut. */
	async discard(): Promise<void> {
		await this.answer.body.dump().catch(() => undefined);
	}

	/** The body's chunks, within the byte bound. Leaving the loop early (too large) closes the body. */
	private async *chunks(): AsyncGenerator<Buffer> {
		if ((this.declaredLength() ?? 0) > this.maxBytes) {
			await this.discard();
			this.tooLarge();
		}
		let size = 0;
		for await (const chunk of this.answer.body) {
			size += (chunk as Buffer).length;
			if (size > this.maxBytes) this.tooLarge();
			yield chunk as Buffer;
		}
	}

	/** The length the host declared (Content-Length), when it declared a whole number. */
	private declaredLength(): number | undefined {
		const length = Number(this.header('content-length') ?? Number.NaN);
		return Number.isSafeInteger(length) && length >= 0 ? length : undefined;
	}

	private tooLarge(): never {
		throw new ImageGenError(502, `The ${this.provider} provider answered more than ${this.maxBytes / (1024 * 1024)} MiB`, { code: 'upstream_invalid_output' });
	}
}
