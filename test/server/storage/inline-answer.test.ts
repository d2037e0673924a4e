/**
 * Inline answers sent from storage (server/src/storage/inline-answer.ts) on the embedded engines:
 * the text is exactly the JSON of the answer with each file's base64, for every size around the
 * 3-byte groups and the read chunks; it comes in bounded pieces, never the whole image at once, each long enough for Node to make its text outside the V8 heap;
 * and a file that is gone, another key's, or not the size recorded is never sent as if whole.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, truncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { MEDIA_DETAILS } from '../../../core/media';
import { openSqliteDatabase, type SqliteDatabase } from '../../../server/src/db/sqlite/database';
import { DiskObjectStorage } from '../../../server/src/storage/disk-object-storage';
import { HostedFiles, type FileRecord } from '../../../server/src/storage/hosted-files';
import { ImageBytes } from '../../../server/src/media/image-bytes';
import { InlineBytes, InlineFile, inlineAnswerBody, openInlineAnswer } from '../../../server/src/storage/inline-answer';
import { SqlFileMetadata } from '../../../server/src/storage/sql-file-metadata';
import { SqliteAdapter } from '../../../server/src/db/sqlite/sqlite-adapter';
import { STREAM_HIGH_WATER_MARK } from '../../../server/src/storage/byte-streams';
import type { ByteRange } from '../../../server/src/storage/object-storage';

const OWNER = 'owner-key-id-0001';
let dataDir: string;
let database: SqliteDatabase;
let files: HostedFiles;

beforeEach(async () => {
	dataDir = mkdtempSync(join(tmpdir(), 'imagegen-inline-'));
	const storage = new DiskObjectStorage({ directory: join(dataDir, 'files') });
	await storage.init();
	database = openSqliteDatabase(dataDir);
	files = new HostedFiles({ storage, metadata: new SqlFileMetadata(new SqliteAdapter(database)), retentionSeconds: 3600, publicBaseUrl: () => 'http://127.0.0.1:1' });
});
afterEach(() => {
	database.close();
	rmSync(dataDir, { recursive: true, force: true });
});

const stored = (bytes: Buffer, owner = OWNER) => files.putBuffer(bytes, MEDIA_DETAILS.png, owner);

/** An answer shaped like a generation's, with `inline` where its images go. */
function answerWith(inline: unknown[]) {
	return { created: 1767261600, model: 'p-image', output_format: 'png', data: inline.map((b64_json, seed) => ({ b64_json, seed, provenance: { c2pa: 'signed', digital_source_type: 'é ✓ \u2028' } })), usage: { images: inline.length, cost_usd: 0.0035 } };
}

async function readAll(stream: NodeJS.ReadableStream): Promise<{ text: string; pieces: number[] }> {
	const pieces: number[] = [];
	const chunks: Buffer[] = [];
	for await (const chunk of stream as AsyncIterable<Buffer>) {
		pieces.push(chunk.length);
		chunks.push(chunk);
	}
	return { text: Buffer.concat(chunks).toString('utf8'), pieces };
}

async function sent(images: FileRecord[], owner = OWNER) {
	const { body, inlineFiles } = inlineAnswerBody(answerWith(images.map((file) => new InlineFile(file.id))));
	return openInlineAnswer(files, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles }, owner);
}

test.each([1, 2, 3, 4, 5, STREAM_HIGH_WATER_MARK - 1, STREAM_HIGH_WATER_MARK, STREAM_HIGH_WATER_MARK + 1, 3 * 65_536 + 2, 786_431, 786_432, 786_433, 1_000_001, 3 * 786_432 + 2])(
	'a file of %i bytes: exactly the JSON with its base64, of the length announced',
	async (size) => {
		const bytes = randomBytes(size);
		const small = randomBytes(7);
		const opened = await sent([await stored(bytes), await stored(small)]);
		if ('gone' in opened) throw new Error('unexpectedly gone');
		const { text } = await readAll(opened.stream);
		expect(text).toBe(JSON.stringify(answerWith([bytes.toString('base64'), small.toString('base64')])));
		expect(Buffer.byteLength(text)).toBe(opened.length);
	},
);

test('the envelope is kept without the images, and says where each one goes', async () => {
	const { body, inlineFiles } = inlineAnswerBody(answerWith([new InlineFile('file-one'), new InlineFile('file-two')]));
	expect(body).toBe(JSON.stringify(answerWith(['', ''])));
	expect(inlineFiles.map((part) => part.fileId)).toEqual(['file-one', 'file-two']);
	for (const part of inlineFiles) expect(body.slice(part.at - 13, part.at + 1)).toBe('{"b64_json":""');
});

test.each([1, 2, 3, 65_535, 65_536, 786_431, 786_432, 786_433, 1_000_001, 3 * 786_432 + 2])('an image of %i bytes in memory: the same JSON, of the length announced', async (size) => {
	const bytes = randomBytes(size);
	const small = randomBytes(7);
	const { body, inlineFiles, inlineBytes } = inlineAnswerBody(answerWith([new InlineBytes(ImageBytes.lent(bytes)), new InlineBytes(ImageBytes.lent(small))]));
	expect(inlineFiles).toEqual([]);
	const opened = await openInlineAnswer(files, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineBytes }, OWNER);
	if ('gone' in opened) throw new Error('unexpectedly gone');
	const { text } = await readAll(opened.stream);
	expect(text).toBe(JSON.stringify(answerWith([bytes.toString('base64'), small.toString('base64')])));
	expect(Buffer.byteLength(text)).toBe(opened.length);
});

/**
 * Node makes a string of base64 this long outside V8's heap (an external string: the heap holds a
 * small handle), so sending an image's text does not make the young generation grow with it.
 */
const EXTERNAL_TEXT_CHARS = 1_031_913;

/** In a fresh Node (no other test's garbage around): V8 heap used, in bytes, by 8 base64 texts of `chars` characters each. */
function heapUsedByTexts(chars: number): number {
	const script = `const bytes = require('node:crypto').randomBytes(${(chars / 4) * 3});
const before = process.memoryUsage().heapUsed;
const kept = Array.from({ length: 8 }, () => bytes.toString('base64'));
process.stdout.write(String(process.memoryUsage().heapUsed - before) + ' ' + kept.length);`;
	const [grown] = execFileSync(process.execPath, ['--max-semi-space-size=64', '-e', script], { encoding: 'utf8' }).split(' ');
	return Number(grown);
}

test('Node keeps base64 text of that length outside the V8 heap, and shorter text inside it', () => {
	// Made on the heap, the 8 texts would take it 8 MiB; outside it, only their handles stay.
	expect(heapUsedByTexts(1_048_576)).toBeLessThan(1024 * 1024);
	expect(heapUsedByTexts(87_380)).toBeGreaterThan(8 * 87_380);
});

test.each([
	['in memory', (bytes: Buffer): Promise<InlineBytes | InlineFile> => Promise.resolve(new InlineBytes(ImageBytes.lent(bytes)))],
	['stored', async (bytes: Buffer): Promise<InlineBytes | InlineFile> => new InlineFile((await stored(bytes)).id)],
])('an image %s goes out as base64 pieces long enough to be made outside the V8 heap, each bounded', async (_where, place) => {
	const bytes = randomBytes(6 * 1024 * 1024 + 1);
	const answer = inlineAnswerBody(answerWith([await place(bytes)]));
	const opened = await openInlineAnswer(files, { status: 200, contentType: 'application/json; charset=utf-8', ...answer }, OWNER);
	if ('gone' in opened) throw new Error('unexpectedly gone');
	const { text, pieces } = await readAll(opened.stream);
	expect(text).toBe(JSON.stringify(answerWith([bytes.toString('base64')])));
	const imagePieces = pieces.filter((length) => length > 1000);
	// Every piece of the image's text but its last: never the whole 8 MB, never short enough for the heap.
	for (const length of imagePieces.slice(0, -1)) {
		expect(length).toBeGreaterThanOrEqual(EXTERNAL_TEXT_CHARS);
		expect(length).toBeLessThanOrEqual(2 * 1024 * 1024);
	}
	expect(imagePieces.length).toBeGreaterThanOrEqual(4);
});

test('a deleted file, or another key’s, is gone: nothing is sent', async () => {
	const kept = await stored(randomBytes(100));
	const deleted = await stored(randomBytes(100));
	expect(await files.remove(deleted.id, OWNER)).toBe(true);
	expect(await sent([kept, deleted])).toEqual({ gone: [deleted.id] });
	expect(await sent([kept], 'other-key-id-0002')).toEqual({ gone: [kept.id] });
});

test('bytes missing from storage while the record lives: gone too', async () => {
	const file = await stored(randomBytes(100));
	await files.storage.delete([file.storageKey]);
	expect(await sent([file])).toEqual({ gone: [file.id] });
});

test('a file shorter than recorded (an unsynced image after a power cut) is gone before a byte is sent', async () => {
	const file = await stored(randomBytes(300_000));
	truncateSync(join(dataDir, 'files', file.storageKey), 200_000);
	expect(await sent([file])).toEqual({ gone: [file.id] });
});

test('a file that shrinks once opened breaks the stream instead of sending a short answer', async () => {
	const file = await stored(randomBytes(300_000));
	const storage = files.storage;
	const shrinking = Object.assign(Object.create(storage) as typeof storage, {
		read: async (key: string, range?: ByteRange, expect?: { size: number }) => {
			const bytes = await storage.read(key, range, expect);
			truncateSync(join(dataDir, 'files', key), 200_000);
			return bytes;
		},
	});
	const shrunk = new HostedFiles({ storage: shrinking, metadata: new SqlFileMetadata(new SqliteAdapter(database)), retentionSeconds: 3600, publicBaseUrl: () => 'http://127.0.0.1:1' });
	const { body, inlineFiles } = inlineAnswerBody(answerWith([new InlineFile(file.id)]));
	const opened = await openInlineAnswer(shrunk, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles }, OWNER);
	if ('gone' in opened) throw new Error('unexpectedly gone');
	await expect(readAll(opened.stream)).rejects.toThrow(/200000 bytes where 300000 were recorded/);
});

test('a storage that cannot be reached is a 503 before anything is sent, and nothing stays open', async () => {
	const file = await stored(randomBytes(100));
	const opened = await stored(randomBytes(100));
	const storage = files.storage;
	const reads: NodeJS.ReadableStream[] = [];
	const unreachable = Object.assign(Object.create(storage) as typeof storage, {
		read: async (key: string) => {
			if (key === file.storageKey) throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
			const bytes = await storage.read(key);
			if (bytes) reads.push(bytes);
			return bytes;
		},
	});
	const failing = new HostedFiles({ storage: unreachable, metadata: new SqlFileMetadata(new SqliteAdapter(database)), retentionSeconds: 3600, publicBaseUrl: () => 'http://127.0.0.1:1' });
	const { body, inlineFiles } = inlineAnswerBody(answerWith([new InlineFile(opened.id), new InlineFile(file.id)]));
	const answer = openInlineAnswer(failing, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles }, OWNER);
	await expect(answer).rejects.toMatchObject({ status: 503, code: 'storage_unavailable' });
	expect(reads).toHaveLength(1);
	expect((reads[0] as unknown as { destroyed: boolean }).destroyed).toBe(true);
});

/** A storage whose reads come in the given piece sizes (as S3 or a slow disk may cut them), each its own buffer. */
function piecewise(pieces: number[], handedOut: Buffer[]): HostedFiles {
	const storage = files.storage;
	const cut = Object.assign(Object.create(storage) as typeof storage, {
		read: async (key: string) => {
			const whole = await storage.read(key);
			if (!whole) return null;
			const read: Buffer[] = [];
			for await (const chunk of whole as AsyncIterable<Buffer>) read.push(chunk);
			const bytes = Buffer.concat(read);
			const chunks: Buffer[] = [];
			for (let from = 0, index = 0; from < bytes.length; from += pieces[index % pieces.length]!, index++) {
				const piece = bytes.subarray(from, from + pieces[index % pieces.length]!);
				const own = Buffer.alloc(piece.length); // never from Node’s shared pool
				piece.copy(own);
				chunks.push(own);
			}
			for (const chunk of chunks) handedOut.push(chunk);
			// One buffer per read, exactly as cut (a byte stream would join what it has buffered).
			return Readable.from(chunks);
		},
	});
	return new HostedFiles({ storage: cut, metadata: new SqlFileMetadata(new SqliteAdapter(database)), retentionSeconds: 3600, publicBaseUrl: () => 'http://127.0.0.1:1' });
}

test.each([[[1]], [[2, 1, 1]], [[1, 4, 2, 7]], [[65_537, 5]], [[786_431]], [[786_433, 2]]])('a file read in pieces of %j bytes: the same base64, and each piece given back once encoded', async (pieces) => {
	const bytes = randomBytes(Math.max(...pieces) > 1_000 ? 2 * 786_432 + 200_003 : 1_001);
	const file = await stored(bytes);
	const handedOut: Buffer[] = [];
	const { body, inlineFiles } = inlineAnswerBody(answerWith([new InlineFile(file.id)]));
	const opened = await openInlineAnswer(piecewise(pieces, handedOut), { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles }, OWNER);
	if ('gone' in opened) throw new Error('unexpectedly gone');
	const { text } = await readAll(opened.stream);
	expect(text).toBe(JSON.stringify(answerWith([bytes.toString('base64')])));
	expect(Buffer.byteLength(text)).toBe(opened.length);
	expect(handedOut.length).toBeGreaterThan(1);
	expect(handedOut.filter((chunk) => chunk.byteLength > 0)).toEqual([]);
});

test('bytes in memory the answer owns are given back once sent, or once the client left; others are left to their owner', async () => {
	const send = async (parts: InlineBytes[], stop = false) => {
		const { body, inlineBytes } = inlineAnswerBody(answerWith(parts));
		const opened = await openInlineAnswer(files, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineBytes }, OWNER);
		if ('gone' in opened) throw new Error('unexpectedly gone');
		if (!stop) return (await readAll(opened.stream)).text;
		// One piece read, then the reader stops, as a client that goes away.
		const reader = opened.stream[Symbol.asyncIterator]();
		await reader.next();
		await reader.return?.();
		return '';
	};
	const owned = randomBytes(300_000);
	const kept = randomBytes(300_000);
	const expected = JSON.stringify(answerWith([owned.toString('base64'), kept.toString('base64')]));
	expect(await send([new InlineBytes(ImageBytes.owned(owned)), new InlineBytes(ImageBytes.lent(kept))])).toBe(expected);
	expect(owned.byteLength).toBe(0);
	expect(kept.byteLength).toBe(300_000);

	const left = randomBytes(300_000);
	await send([new InlineBytes(ImageBytes.owned(left))], true);
	expect(left.byteLength).toBe(0);
});

test('a stored image whose bytes are at hand goes out from them once, and from its file on a replay', async () => {
	const bytes = randomBytes(10_000);
	const file = await stored(bytes);
	const { body, inlineFiles, inlineBytes } = inlineAnswerBody(answerWith([new InlineFile(file.id, new InlineBytes(ImageBytes.lent(bytes)))]));
	expect(inlineFiles).toEqual([{ fileId: file.id, at: inlineBytes[0]!.at }]);
	const expected = JSON.stringify(answerWith([bytes.toString('base64')]));
	// The file is removed: the first answer does not read it back.
	await files.remove(file.id, OWNER);
	const first = await openInlineAnswer(files, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles, inlineBytes }, OWNER);
	expect('stream' in first && (await readAll(first.stream)).text).toBe(expected);
	// A replay has only the record: the file is read, and is gone.
	expect(await openInlineAnswer(files, { status: 200, contentType: 'application/json; charset=utf-8', body, inlineFiles }, OWNER)).toEqual({ gone: [file.id] });
});
