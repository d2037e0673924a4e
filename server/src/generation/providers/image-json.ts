/**
 * A host's JSON answer read as it arrives, its long strings (base64 images: OpenAI's `b64_json`,
 * WebUI's `images`) decoded to bytes on the way instead of kept as text. Read whole, a 6 MB PNG
 * answered as base64 was held four times at 8 MB each (the answer's chunks, their join, the text,
 * the parsed string) before it was decoded; read here, it is held once, as the image's own bytes.
 *
 * Only the strings' ends are found here (a quote not escaped by a backslash); the rest of the
 * answer, its small part, is parsed by JSON.parse, so its errors and shapes are those of any JSON.
 * A long string's place in that part is taken by a token that the parse turns back into its bytes:
 * the field holds a Buffer where it held a string (`base64Bytes` takes either).
 *
 * Why not a streaming JSON library: stream-json hands every chunk of a long string through its own
 * tokenizer, in JavaScript, which holds the event loop far longer than the whole parse and decode
 * here, and @streamparser/json and jsonparse keep each string whole. Finding a quote is
 * Buffer.indexOf, native; the decoding is Node's own base64.
 */
import { randomBytes } from 'node:crypto';
import { resizedBytes } from '../../media/release-bytes';

/** Strings longer than this (bytes as sent) are decoded as base64 on the way: no answer field but an image's is this long. */
const LONG_STRING_BYTES = 64 * 1024;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** The bytes of a base64 field: a short one still a string, a long one already decoded by the reader. */
export function base64Bytes(value: unknown): Buffer | undefined {
	if (Buffer.isBuffer(value)) return value.length > 0 ? value : undefined;
	return typeof value === 'string' && value ? Buffer.from(value, 'base64') : undefined;
}

/** A host's answer that does not parse as JSON; an HTML page usually means a base URL that names the host's site, not its API. */
export class NotJsonError extends Error {
	constructor(readonly htmlPage: boolean) {
		super(htmlPage ? 'an HTML page' : 'not JSON');
	}
}

export function parseAnswer(text: string, reviver?: (key: string, value: unknown) => unknown): unknown {
	try {
		return JSON.parse(text, reviver);
	} catch {
		throw new NotJsonError(/^\s*</.test(text));
	}
}

export class ImageJsonReader {
	/** Bytes of the answer written so far. */
	private consumed = 0;
	/** The small part of the answer, copied out of the chunks so that they can go. */
	private readonly kept: Buffer[] = [];
	private inString = false;
	/** The string's last byte so far was an escaping backslash: its next byte cannot end it. */
	private escaping = false;
	/** The bytes of the string being read, while it is short. */
	private stringParts: Buffer[] = [];
	private stringBytes = 0;
	private decoder: Base64Decoder | undefined;
	private readonly decoded = new Map<string, Buffer>();
	/** Names a long string's place: a string the host sends cannot take it. */
	private readonly tokenPrefix = `\u0000${randomBytes(9).toString('base64')}:`;

	/** @param length the answer's length in bytes when its host said it (Content-Length) */
	constructor(private readonly length?: number) {}

	write(chunk: Buffer): void {
		const chunkStart = this.consumed;
		this.consumed += chunk.length;
		let at = 0;
		while (at < chunk.length) {
			if (!this.inString) {
				const quote = chunk.indexOf(QUOTE, at);
				const end = quote === -1 ? chunk.length : quote + 1;
				this.kept.push(Buffer.from(chunk.subarray(at, end)));
				at = end;
				this.inString = quote !== -1;
				continue;
			}
			const end = this.stringEnd(chunk, at);
			const partEnd = end === -1 ? chunk.length : end;
			this.addToString(chunk.subarray(at, partEnd), chunkStart + partEnd);
			if (end === -1) return;
			this.endString();
			this.kept.push(Buffer.from('"'));
			this.inString = false;
			at = end + 1;
		}
	}

	/** The answer, parsed; throws a NotJsonError when it is not JSON. */
	end(): unknown {
		const text = Buffer.concat(this.kept).toString('utf8');
		if (this.decoded.size === 0) return parseAnswer(text);
		return parseAnswer(text, (_key, value: unknown) => (typeof value === 'string' && value.startsWith(this.tokenPrefix) ? (this.decoded.get(value) ?? value) : value));
	}

	/** Where in the chunk, from `from`, the open string ends (its closing quote), or -1 when it goes on. */
	private stringEnd(chunk: Buffer, from: number): number {
		let start = from;
		if (this.escaping && start < chunk.length) {
			start++;
			this.escaping = false;
		}
		for (let quote = chunk.indexOf(QUOTE, start); quote !== -1; quote = chunk.indexOf(QUOTE, quote + 1)) {
			if (backslashesBefore(chunk, quote, start) % 2 === 0) return quote;
		}
		this.escaping = backslashesBefore(chunk, chunk.length, start) % 2 === 1;
		return -1;
	}

	/** @param answerOffset where in the answer the part ends */
	private addToString(part: Buffer, answerOffset: number): void {
		if (part.length === 0) return;
		if (this.decoder) {
			this.decoder.write(part);
			return;
		}
		this.stringParts.push(Buffer.from(part));
		this.stringBytes += part.length;
		if (this.stringBytes <= LONG_STRING_BYTES) return;
		// The string is at most what is read of it and the rest of the answer, 3 bytes to 4 characters.
		const rest = this.length === undefined ? undefined : this.length - answerOffset;
		this.decoder = new Base64Decoder(rest === undefined || rest < 0 ? undefined : Math.ceil(((this.stringBytes + rest) * 3) / 4));
		for (const each of this.stringParts) this.decoder.write(each);
		this.stringParts = [];
	}

	private endString(): void {
		if (this.decoder) {
			const token = `${this.tokenPrefix}${this.decoded.size}`;
			this.decoded.set(token, this.decoder.end());
			this.kept.push(Buffer.from(JSON.stringify(token).slice(1, -1)));
			this.decoder = undefined;
		} else {
			this.kept.push(...this.stringParts);
		}
		this.stringParts = [];
		this.stringBytes = 0;
	}
}

/** How many backslashes come right before `index`, counting no further back than `start`. */
function backslashesBefore(chunk: Buffer, index: number, start: number): number {
	let count = 0;
	while (index - count - 1 >= start && chunk[index - count - 1] === BACKSLASH) count++;
	return count;
}

/** JSON escapes a base64 text may carry: `\/` (PHP's encoder) and whitespace such as `\n` (MIME's line breaks), which base64 ignores. */
const ESCAPED: Record<string, string> = { '/': '/', n: '', r: '', t: '' };
/** Where an answer's length is not known (chunked), the decoded image starts at this and doubles. */
const FIRST_CAPACITY = 1024 * 1024;
/** Outside both base64 alphabets (the URL-safe one too, which Node's decoder also takes) and its padding. */
const NOT_BASE64 = /[^A-Za-z0-9+/=_-]/;
const NOT_BASE64_ALL = /[^A-Za-z0-9+/=_-]/g;

/**
 * Base64 text as JSON string content, decoded as it comes: whole groups of four characters at a
 * time, the rest carried to the next part. Characters outside base64 are skipped, as Node's own
 * decoder skips them.
 */
class Base64Decoder {
	private bytes: Buffer;
	private written = 0;
	private carry = '';
	private padded = false;
	/** Inside an escape: '\\' after the backslash, or '\\u' and the hex digits so far. */
	private escape = '';

	/**
	 * @param capacity the most bytes the string can decode to, when the answer's length tells it:
	 * the image is decoded into one buffer of that size, neither grown nor joined.
	 */
	constructor(capacity: number | undefined) {
		this.bytes = Buffer.allocUnsafeSlow(capacity ?? FIRST_CAPACITY);
	}

	write(part: Buffer): void {
		let text = '';
		let at = 0;
		while (at < part.length) {
			if (this.escape) {
				const char = String.fromCharCode(part[at++]!);
				text += this.continueEscape(char);
				continue;
			}
			const backslash = part.indexOf(BACKSLASH, at);
			const end = backslash === -1 ? part.length : backslash;
			text += part.toString('latin1', at, end);
			at = end;
			if (backslash !== -1) {
				this.escape = '\\';
				at++;
			}
		}
		this.decode(text);
	}

	/**
	 * The image in a buffer of its own size that owns its memory: the runner releases an owned image's
	 * memory as soon as it is done with it (media/image-bytes.ts), which a view on part of a larger
	 * buffer would escape, its few MB left to the next collection.
	 */
	end(): Buffer {
		if (this.carry) this.put(this.carry);
		return resizedBytes(this.bytes, this.written);
	}

	/** Decodes whole base64 text into the buffer, growing it when the answer's length did not tell its size. */
	private put(text: string): void {
		const most = Math.ceil((text.length * 3) / 4);
		if (this.written + most > this.bytes.length) this.bytes = resizedBytes(this.bytes, Math.max(this.bytes.length * 2, this.written + most));
		this.written += this.bytes.write(text, this.written, 'base64');
	}

	private continueEscape(char: string): string {
		if (this.escape === '\\' && char !== 'u') {
			this.escape = '';
			return ESCAPED[char] ?? '';
		}
		this.escape += char;
		if (this.escape.length < 6) return '';
		const code = Number.parseInt(this.escape.slice(2), 16);
		this.escape = '';
		return code < 0x80 ? String.fromCharCode(code) : '';
	}

	private decode(text: string): void {
		if (this.padded) return;
		// Groups of four must be counted without what the decoder will skip.
		let all = this.carry + (NOT_BASE64.test(text) ? text.replace(NOT_BASE64_ALL, '') : text);
		// Padding ends the data, as it does for Node's decoder: nothing after it counts.
		const padding = all.indexOf('=');
		if (padding !== -1) {
			all = all.slice(0, padding);
			this.padded = true;
		}
		const whole = this.padded ? all.length : all.length - (all.length % 4);
		if (whole > 0) this.put(all.slice(0, whole));
		this.carry = all.slice(whole);
	}
}
