/**
 * A multipart/form-data body that streams its file parts instead of holding them in memory.
 *
 * Community nodes may not import `stream` or `form-data`, so the body presents itself as a Blob
 * (size, type, stream()): n8n's HTTP client streams a Blob straight to the socket with its size
 * as Content-Length, which lets a 1 GB video pass through with only one chunk in memory.
 */
import { randomBytes } from 'crypto';

export type ByteSource = Uint8Array | AsyncIterable<Uint8Array | string>;

interface MultipartField {
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

	private readonly files: readonly MultipartFile[];

	/** Each file's part header: the text fields go before the first. */
	private readonly heads: Uint8Array[];

	private readonly tail: Uint8Array;

	/** One file, or several in order (e.g. the `image[]` parts of an images edit). */
	constructor(files: MultipartFile | readonly MultipartFile[], fields: readonly MultipartField[] = [], boundary: string = randomBoundary()) {
		this.files = Array.isArray(files) ? files : [files as MultipartFile];
		const fieldParts = fields
			.map((field) => `--${boundary}${CRLF}Content-Disposition: form-data; name=${quoted(field.field)}${CRLF}${CRLF}${field.value}${CRLF}`)
			.join('');
		this.heads = this.files.map((file, index) =>
			encoder.encode(
				`${index === 0 ? fieldParts : CRLF}--${boundary}${CRLF}` +
					`Content-Disposition: form-data; name=${quoted(file.field)}; filename=${quoted(file.fileName)}${CRLF}` +
					`Content-Type: ${file.contentType}${CRLF}${CRLF}`,
			),
		);
		this.tail = encoder.encode(`${CRLF}--${boundary}--${CRLF}`);
		this.size = this.heads.reduce((sum, head, index) => sum + head.byteLength + this.files[index]!.size, this.tail.byteLength);
		this.type = `multipart/form-data; boundary=${boundary}`;
	}

	get [Symbol.toStringTag](): string {
		return 'Blob';
	}

	async *stream(): AsyncGenerator<Uint8Array> {
		for (const [index, file] of this.files.entries()) {
			yield this.heads[index]!;
			const { content } = file;
			if (content instanceof Uint8Array) {
				yield content;
			} else {
				for await (const chunk of content) yield typeof chunk === 'string' ? encoder.encode(chunk) : chunk;
			}
		}
		yield this.tail;
	}
}
