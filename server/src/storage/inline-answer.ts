/**
 * Inline answers (`b64_json`): the image is stored like a hosted one, and the answer is sent from
 * storage: the JSON around the images (the envelope) as text, each image base64-encoded chunk by
 * chunk as it is read. No string or buffer of a whole image is made for the answer (a 3 MB image
 * was a 4 MB base64 string, then a 4 MB JSON text, and for an idempotent request a 4 MB database
 * value read back whole on every replay), and an idempotent answer is remembered as its envelope
 * and file ids, so a replay streams the same file the same way.
 */
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { InlineFilePart, StoredAnswer } from '../idempotency/idempotency-store';
import { isEngineUnreachable, serviceUnavailable } from '../http/engine-unavailable';
import type { FileRecord, HostedFiles } from './hosted-files';

/** Stands, in an answer object, for the bytes of the hosted file `fileId`, sent as a base64 JSON string. */
export class InlineFile {
	constructor(readonly fileId: string) {}
}

/** The answer as JSON text without the bytes of its inline files, and where each one goes. */
export function inlineAnswerBody(result: unknown): { body: string; inlineFiles: InlineFilePart[] } {
	// No real answer holds it: U+0000 is escaped in JSON text, and the UUID is this call's own.
	const mark = `\u0000${randomUUID()}`;
	const fileIds: string[] = [];
	const text = JSON.stringify(result, (_key, value: unknown) => {
		if (!(value instanceof InlineFile)) return value;
		fileIds.push(value.fileId);
		return mark;
	});
	const pieces = text.split(JSON.stringify(mark).slice(1, -1));
	let body = pieces[0]!;
	const inlineFiles = fileIds.map((fileId, index) => {
		const part = { fileId, at: body.length };
		body += pieces[index + 1]!;
		return part;
	});
	return { body, inlineFiles };
}

/** The answer ready to send, or the inline files that are gone (expired, deleted or never this key's). */
export type OpenedAnswer = { stream: Readable; length: number } | { gone: string[] };

/**
 * Opens every inline file of `answer` before a byte is sent, so a file that is gone or a storage
 * that cannot be reached is still an ordinary answer (a replay runs again, a 503), never a cut one.
 */
export async function openInlineAnswer(files: HostedFiles, answer: StoredAnswer, ownerKeyId: string): Promise<OpenedAnswer> {
	const parts = answer.inlineFiles ?? [];
	const opened: Array<{ file: FileRecord; bytes: Readable }> = [];
	const gone: string[] = [];
	try {
		for (const part of parts) {
			const file = await files.info(part.fileId, ownerKeyId);
			const bytes = file && (await files.open(file));
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
	const length = opened.reduce((sum, { file }) => sum + base64Length(file.size), Buffer.byteLength(answer.body));
	return { stream: Readable.from(answerChunks(answer.body, parts, opened), { objectMode: false }), length };
}

function base64Length(bytes: number): number {
	return Math.ceil(bytes / 3) * 4;
}

async function* answerChunks(body: string, parts: readonly InlineFilePart[], opened: Array<{ file: FileRecord; bytes: Readable }>): AsyncGenerator<string> {
	let from = 0;
	try {
		for (const [index, part] of parts.entries()) {
			yield body.slice(from, part.at);
			yield* base64Chunks(opened[index]!);
			from = part.at;
		}
		yield body.slice(from);
	} finally {
		// Stopped early (the client left, a read failed): the files not reached yet are closed too.
		for (const { bytes } of opened) bytes.destroy();
	}
}

/**
 * Each chunk as it is read, all but the last encoded in whole groups of 3 bytes, the 0–2 left
 * over carried to the next chunk: the text is the one `toString('base64')` of the whole file gives.
 */
async function* base64Chunks({ file, bytes }: { file: FileRecord; bytes: Readable }): AsyncGenerator<string> {
	let carried = Buffer.alloc(0);
	let read = 0;
	for await (const chunk of bytes as AsyncIterable<Buffer>) {
		read += chunk.length;
		const pending = carried.length > 0 ? Buffer.concat([carried, chunk]) : chunk;
		const whole = pending.length - (pending.length % 3);
		carried = Buffer.from(pending.subarray(whole));
		if (whole > 0) yield pending.toString('base64', 0, whole);
	}
	// The length sent ahead was counted from the recorded size: other bytes would break the answer.
	if (read !== file.size) throw new Error(`hosted file ${file.id} has ${read} bytes where ${file.size} were recorded`);
	if (carried.length > 0) yield carried.toString('base64');
}
