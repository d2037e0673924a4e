/**
 * A multipart/form-data body that streams its file part instead of holding it in memory.
 *
 * Community nodes may not import `stream` or `form-data`, so the body presents itself as a Blob
 * (size, type, stream()): n8n's HTTP client streams a Blob straight to the socket with its size
 * as Content-Length, which lets a 1 GB video pass through with only one chunk in memory.
 */
import { randomBytes } from 'crypto';

export type ByteSource = Uint8Array | AsyncIterable<Uint8Array | string>;

export interface MultipartField {
	field: string;
	value: string;
}

export interface MultipartFile {
	field: string;
	fileName: string;
	contentType: string;
	/** Exact length of `content` in bytes; it becomes part of Content-Length. */
	size: number;
	content: ByteSource;
}

const CRLF = '\r\n';
const encoder = new TextEncoder();

function quoted(value: string): string {
	return `"${value.replace(/[\r\n"\\]/g, (character) => encodeURIComponent(character))}"`;
}

function randomBoundary(): string {
	return `----imagegen-${randomBytes(16).toString('hex')}`;
}

export class StreamedMultipartBody {
	readonly size: number;

	readonly type: string;

	private readonly head: Uint8Array;

	private readonly tail: Uint8Array;

	constructor(
		private readonly file: MultipartFile,
		fields: readonly MultipartField[] = [],
		boundary: string = randomBoundary(),
	) {
		const fieldParts = fields
			.map((field) => `--${boundary}${CRLF}Content-Disposition: form-data; name=${quoted(field.field)}${CRLF}${CRLF}${field.value}${CRLF}`)
			.join('');
		this.head = encoder.encode(
			`${fieldParts}--${boundary}${CRLF}` +
				`Content-Disposition: form-data; name=${quoted(file.field)}; filename=${quoted(file.fileName)}${CRLF}` +
				`Content-Type: ${file.contentType}${CRLF}${CRLF}`,
		);
		this.tail = encoder.encode(`${CRLF}--${boundary}--${CRLF}`);
		this.size = this.head.byteLength + file.size + this.tail.byteLength;
		this.type = `multipart/form-data; boundary=${boundary}`;
	}

	get [Symbol.toStringTag](): string {
		return 'Blob';
	}

	async *stream(): AsyncGenerator<Uint8Array> {
		yield this.head;
		const { content } = this.file;
		if (content instanceof Uint8Array) {
			yield content;
		} else {
			for await (const chunk of content) yield typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
		}
		yield this.tail;
	}
}
