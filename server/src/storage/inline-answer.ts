/**
 * Inline answers (`b64_json`): the JSON around the images (the envelope) is sent as text, each
 * image base64-encoded piece by piece. No string or buffer of a whole answer is made (a 3 MB image
 * was a 4 MB base64 string, then a 4 MB JSON text, and for an idempotent request a 4 MB database
 * value read back whole on every replay). An answer that will be replayed (an `Idempotency-Key`)
 * has its images stored like hosted ones and is remembered as its envelope and file ids, so the
 * first answer and every replay stream the same files; one nobody will replay is sent from the
 * marked image already in memory, with no storage round trip (a write and a read of the whole image).
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { InlineFilePart, StoredAnswer } from '../idempotency/idempotency-store';
import { isEngineUnreachable, serviceUnavailable } from '../http/engine-unavailable';
import type { ImageBytes } from '../media/image-bytes';
import { releaseBytes } from '../media/release-bytes';
import type { FileRecord, HostedFiles } from './hosted-files';

/**
 * Stands, in an answer object, for the bytes of the hosted file `fileId`, sent as a base64 JSON
 * string. `inMemory`: its bytes, still at hand when the answer is made, so the first answer goes
 * out from them without reading the file back; a replay reads the file.
 */
export class InlineFile {
	constructor(
		readonly fileId: string,
		readonly inMemory?: InlineBytes,
	) {}
}

/**
 * Stands, in an answer object, for an image in memory, sent as a base64 JSON string. The answer is
 * done with it once sent (or never sent, the client gone): it is released then, which gives its
 * memory back when it is ours (media/image-bytes.ts) and leaves lent bytes alone.
 */
export class InlineBytes {
	constructor(readonly image: ImageBytes) {}
}

/** Where in an answer's body (a string index) an image in memory goes as base64; never stored. */
export interface InlineBytesPart {
	image: ImageBytes;
	at: number;
}

/** The answer as JSON text without the bytes of its inline images, and where each one goes. */
export function inlineAnswerBody(result: unknown): { body: string; inlineFiles: InlineFilePart[]; inlineBytes: InlineBytesPart[] } {
	// No real answer holds it: U+0000 is escaped in JSON text, and the UUID is this call's own.
	const mark = `\u0000${randomUUID()}`;
	const found: Array<InlineFile | InlineBytes> = [];
	const text = JSON.stringify(result, (_key, value: unknown) => {
		if (!(value instanceof InlineFile || value instanceof InlineBytes)) return value;
		found.push(value);
		return mark;
	});
	const pieces = text.split(JSON.stringify(mark).slice(1, -1));
	let body = pieces[0]!;
	const inlineFiles: InlineFilePart[] = [];
	const inlineBytes: InlineBytesPart[] = [];
	for (const [index, value] of found.entries()) {
		if (value instanceof InlineFile) inlineFiles.push({ fileId: value.fileId, at: body.length });
		const inMemory = value instanceof InlineFile ? value.inMemory : value;
		if (inMemory) inlineBytes.push({ image: inMemory.image, at: body.length });
		body += pieces[index + 1]!;
	}
	return { body, inlineFiles, inlineBytes };
}

/** An answer to send: as stored for replay, plus the images in memory an answer nobody replays has. */
export type InlineAnswer = StoredAnswer & { inlineBytes?: readonly InlineBytesPart[] };

/** The answer ready to send, or the inline files that are gone (expired, deleted or never this key's). */
type OpenedAnswer = { stream: Readable; length: number } | { gone: string[] };

/** One image of an answer, where it goes in the body, and its base64 text in pieces. */
interface ImageSource {
	at: number;
	length: number;
	chunks: () => AsyncIterable<string> | Iterable<string>;
	close(): void;
}

/**
 * Opens every inline file of `answer` before a byte is sent, so a file that is gone or a storage
 * that cannot be reached is still an ordinary answer (a replay runs again, a 503), never a cut one.
 */
export async function openInlineAnswer(files: HostedFiles, answer: InlineAnswer, ownerKeyId: string): Promise<OpenedAnswer> {
	// A stored image whose bytes are still in memory (a first answer) is sent from them.
	const inMemory = new Set((answer.inlineBytes ?? []).map((part) => part.at));
	const parts = (answer.inlineFiles ?? []).filter((part) => !inMemory.has(part.at));
	const opened: Array<{ file: FileRecord; bytes: Readable }> = [];
	const gone: string[] = [];
	try {
		for (const part of parts) {
			const file = await files.info(part.fileId, ownerKeyId);
			const bytes = file && (await files.openWhole(file));
			if (file && bytes) opened.push({ file, bytes });
			else gone.push(part.fileId);
		}
	} catch (error) {
		for (const { bytes } of opened) bytes.destroy();
		throw isEngineUnreachable(error) ? serviceUnavailable(error, 'storage_unavailable') : error;
	}
	if (gone.length > 0) {
		for (const { bytes } of opened) bytes.destroy();
		return { gone };
	}
	const sources: ImageSource[] = [
		...opened.map((source, index) => ({ at: parts[index]!.at, length: base64Length(source.file.size), chunks: () => base64Chunks(source), close: () => source.bytes.destroy() })),
		...(answer.inlineBytes ?? []).map(({ at, image }) => ({
			at,
			length: base64Length(image.bytes.length),
			chunks: () => memoryBase64Chunks(image.bytes),
			// Sent once (an answer nobody replays), or never when the client left: done with either way.
			close: () => image.release(),
		})),
	].sort((a, b) => a.at - b.at);
	const length = sources.reduce((sum, source) => sum + source.length, Buffer.byteLength(answer.body));
	return { stream: Readable.from(answerChunks(answer.body, sources), { objectMode: false }), length };
}

function base64Length(bytes: number): number {
	return Math.ceil(bytes / 3) * 4;
}

async function* answerChunks(body: string, sources: readonly ImageSource[]): AsyncGenerator<string> {
	let from = 0;
	try {
		for (const source of sources) {
			yield body.slice(from, source.at);
			yield* source.chunks();
			from = source.at;
		}
		yield body.slice(from);
	} finally {
		// Stopped early (the client left, a read failed): the files not reached yet are closed too.
		for (const source of sources) source.close();
	}
}

/**
 * An image's base64 goes out in pieces of this many bytes (a whole number of 3-byte groups), whose
 * text is 1 MiB: longer than the text Node makes outside V8's heap (an external string; the heap
 * holds only its handle), so an answer's megabytes of text never pass through the young
 * generation, which V8 would otherwise grow with their allocation rate and keep grown. Each piece is
 * a bounded copy, given back once written; never the whole image's text.
 */
const PIECE_BYTES = 3 * 262_144;

function* memoryBase64Chunks(bytes: Buffer): Generator<string> {
	for (let from = 0; from < bytes.length; from += PIECE_BYTES) yield bytes.toString('base64', from, Math.min(from + PIECE_BYTES, bytes.length));
}

/**
 * A file's bytes, gathered from its reads into pieces of PIECE_BYTES (its last piece shorter), each
 * encoded whole: the text is the one `toString('base64')` of the whole file gives. Every read chunk
 * and every gathered piece is given back once encoded (media/release-bytes.ts).
 */
async function* base64Chunks({ file, bytes }: { file: FileRecord; bytes: Readable }): AsyncGenerator<string> {
	let gathered: Buffer[] = [];
	let gatheredBytes = 0;
	let read = 0;
	for await (const chunk of bytes as AsyncIterable<Buffer>) {
		read += chunk.length;
		gathered.push(chunk);
		gatheredBytes += chunk.length;
		if (gatheredBytes < PIECE_BYTES) continue;
		const piece = joined(gathered, gatheredBytes);
		const whole = gatheredBytes - (gatheredBytes % 3);
		// The 0–2 bytes past the last whole group start the next piece.
		gathered = whole < gatheredBytes ? [Buffer.from(piece.subarray(whole))] : [];
		gatheredBytes -= whole;
		const text = piece.toString('base64', 0, whole);
		releaseBytes(piece);
		yield text;
	}
	// The length sent ahead was counted from the recorded size: other bytes would break the answer.
	if (read !== file.size) throw new Error(`hosted file ${file.id} has ${read} bytes where ${file.size} were recorded`);
	if (gatheredBytes === 0) return;
	const last = joined(gathered, gatheredBytes);
	const text = last.toString('base64');
	releaseBytes(last);
	yield text;
}

/** The chunks as one buffer of their own, each chunk given back once copied (or the one chunk itself). */
function joined(chunks: readonly Buffer[], length: number): Buffer {
	if (chunks.length === 1) return chunks[0]!;
	const whole = Buffer.concat(chunks, length);
	for (const chunk of chunks) releaseBytes(chunk);
	return whole;
}
