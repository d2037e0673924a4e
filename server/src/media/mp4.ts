/**
 * Checks that a file on disk is a whole ISO-BMFF MP4 and reads what a video answer reports about
 * it, from its box structure alone: each top-level box's header is read where it sits (never the
 * media data), and only `moov` (the index, small next to the media) is read whole, up to a bound.
 * A download cut short shows as a last box that claims more bytes than the file has.
 */
import { open, type FileHandle } from 'node:fs/promises';

export interface Mp4Info {
	width: number;
	height: number;
	durationSeconds: number;
	hasAudio: boolean;
	/** `moov` comes before `mdat`, so a player can start before the whole file has arrived. */
	faststart: boolean;
	/** The `ftyp` major brand (`isom`, `mp42` …). */
	brand: string;
}

/** Why a file is not an MP4 this service hosts; `reason` says what was found. */
export class Mp4Error extends Error {
	constructor(readonly reason: string) {
		super(`not a playable MP4: ${reason}`);
		this.name = 'Mp4Error';
	}
}

/** Brands of the ISO base media / MP4 family (a QuickTime `qt  ` file or a 3GP is something else). */
const MP4_BRAND = /^(isom|iso[2-9]|mp41|mp42|avc1|dash|M4V |mmp4)$/;
/** The index of a short video is kilobytes; this only stops a forged size from being read. */
const MAX_MOOV_BYTES = 16 * 1024 * 1024;
const MAX_TOP_LEVEL_BOXES = 10_000;

function brandsOf(ftypPayload: Buffer): string[] {
	const brands = [ftypPayload.toString('latin1', 0, 4)];
	for (let at = 8; at + 4 <= ftypPayload.length; at += 4) brands.push(ftypPayload.toString('latin1', at, at + 4));
	return brands;
}

/** Whether the first bytes of a file are an `ftyp` box naming an MP4-family brand. */
export function looksLikeMp4(head: Buffer): boolean {
	if (head.length < 12 || head.toString('latin1', 4, 8) !== 'ftyp') return false;
	const size = head.readUInt32BE(0);
	return brandsOf(head.subarray(8, Math.min(head.length, size))).some((brand) => MP4_BRAND.test(brand));
}

/** What a file that is not an MP4 looks like, so the refusal names it. */
function describeOther(head: Buffer): string {
	if (head.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'it is a PNG image';
	if (head.readUInt32BE(0) === 0x1a45dfa3) return 'it is a Matroska/WebM file (EBML header)';
	if (head.toString('latin1', 0, 4) === 'RIFF') return `it is a RIFF (${head.toString('latin1', 8, 12)}) file`;
	return "it does not start with an ISO-BMFF 'ftyp' box";
}

interface TopBox {
	type: string;
	offset: number;
	headerSize: number;
	size: number;
}

async function readAt(file: FileHandle, position: number, length: number): Promise<Buffer> {
	const buffer = Buffer.alloc(length);
	const { bytesRead } = await file.read(buffer, 0, length, position);
	return buffer.subarray(0, bytesRead);
}

/** The top-level boxes, from their headers; their sizes must add up to the file's. */
async function topLevelBoxes(file: FileHandle, fileSize: number): Promise<TopBox[]> {
	const boxes: TopBox[] = [];
	for (let offset = 0; offset < fileSize; ) {
		if (boxes.length >= MAX_TOP_LEVEL_BOXES) throw new Mp4Error(`more than ${MAX_TOP_LEVEL_BOXES} top-level boxes`);
		const header = await readAt(file, offset, 16);
		if (header.length < 8) throw new Mp4Error(`${fileSize - offset} stray bytes after the last box (truncated or damaged)`);
		const type = header.toString('latin1', 4, 8);
		let size = header.readUInt32BE(0);
		let headerSize = 8;
		if (size === 1) {
			if (header.length < 16) throw new Mp4Error(`box '${type}' at ${offset} is cut off in its header (truncated)`);
			size = Number(header.readBigUInt64BE(8));
			headerSize = 16;
		} else if (size === 0) size = fileSize - offset;
		if (size < headerSize) throw new Mp4Error(`box '${type}' at ${offset} has an impossible size ${size}`);
		if (offset + size > fileSize) throw new Mp4Error(`box '${type}' at ${offset} needs ${size} bytes but the file ends after ${fileSize - offset} (truncated)`);
		boxes.push({ type, offset, headerSize, size });
		offset += size;
	}
	return boxes;
}

/** The child boxes of a container box's payload, as [type, payload] pairs. */
function* children(payload: Buffer): Generator<[string, Buffer]> {
	for (let at = 0; at + 8 <= payload.length; ) {
		let size = payload.readUInt32BE(at);
		let headerSize = 8;
		if (size === 1 && at + 16 <= payload.length) {
			size = Number(payload.readBigUInt64BE(at + 8));
			headerSize = 16;
		} else if (size === 0) size = payload.length - at;
		if (size < headerSize || at + size > payload.length) throw new Mp4Error(`a '${payload.toString('latin1', at + 4, at + 8)}' box inside 'moov' overruns its parent`);
		yield [payload.toString('latin1', at + 4, at + 8), payload.subarray(at + headerSize, at + size)];
		at += size;
	}
}

function child(payload: Buffer, type: string): Buffer | undefined {
	for (const [found, body] of children(payload)) if (found === type) return body;
	return undefined;
}

function need(box: Buffer | undefined, length: number, what: string): Buffer {
	if (box === undefined || box.length < length) throw new Mp4Error(`'moov' has no complete '${what}' box`);
	return box;
}

/** The movie's length from `mvhd` (version 0 has 32-bit times, version 1 64-bit). */
function movieSeconds(moov: Buffer): number {
	const mvhd = need(child(moov, 'mvhd'), 20, 'mvhd');
	const wide = mvhd[0] === 1;
	const timescale = need(mvhd, wide ? 32 : 20, 'mvhd').readUInt32BE(wide ? 20 : 12);
	const duration = wide ? Number(mvhd.readBigUInt64BE(24)) : mvhd.readUInt32BE(16);
	if (timescale === 0) throw new Mp4Error("'mvhd' has a time scale of 0");
	return duration / timescale;
}

interface Track {
	handler: string;
	width: number;
	height: number;
}

/** A track's kind (`hdlr`) and its presentation size (`tkhd`, 16.16 fixed point). */
function trackOf(trak: Buffer): Track {
	const tkhd = need(child(trak, 'tkhd'), 84, 'tkhd');
	const sizeAt = tkhd[0] === 1 ? 88 : 76;
	need(tkhd, sizeAt + 8, 'tkhd');
	const hdlr = need(child(need(child(trak, 'mdia'), 8, 'mdia'), 'hdlr'), 12, 'hdlr');
	return { handler: hdlr.toString('latin1', 8, 12), width: tkhd.readUInt32BE(sizeAt) / 65536, height: tkhd.readUInt32BE(sizeAt + 4) / 65536 };
}

function describeMoov(moov: Buffer): Pick<Mp4Info, 'width' | 'height' | 'durationSeconds' | 'hasAudio'> {
	const tracks = [...children(moov)].filter(([type]) => type === 'trak').map(([, body]) => trackOf(body));
	const video = tracks.find((track) => track.handler === 'vide');
	if (video === undefined) throw new Mp4Error('it has no video track');
	if (video.width <= 0 || video.height <= 0) throw new Mp4Error(`its video track has no frame size (${video.width}×${video.height})`);
	return { width: Math.round(video.width), height: Math.round(video.height), durationSeconds: movieSeconds(moov), hasAudio: tracks.some((track) => track.handler === 'soun') };
}

async function inspectOpen(file: FileHandle): Promise<Mp4Info> {
	const fileSize = (await file.stat()).size;
	if (fileSize === 0) throw new Mp4Error('the file is empty');
	const head = await readAt(file, 0, 64);
	if (head.length < 8 || head.toString('latin1', 4, 8) !== 'ftyp') throw new Mp4Error(head.length < 8 ? `only ${head.length} bytes` : describeOther(head));
	if (!looksLikeMp4(head)) throw new Mp4Error(`its brands (${brandsOf(head.subarray(8, Math.min(head.length, head.readUInt32BE(0)))).join(', ').trim()}) are not the MP4 family's`);
	const boxes = await topLevelBoxes(file, fileSize);
	const moov = boxes.find((box) => box.type === 'moov');
	const mdat = boxes.find((box) => box.type === 'mdat');
	if (moov === undefined) throw new Mp4Error("it has no 'moov' box (the index a player needs)");
	if (mdat === undefined) throw new Mp4Error("it has no 'mdat' box (no media data)");
	if (moov.size > MAX_MOOV_BYTES) throw new Mp4Error(`its 'moov' box is ${moov.size} bytes, more than ${MAX_MOOV_BYTES}`);
	const index = await readAt(file, moov.offset + moov.headerSize, moov.size - moov.headerSize);
	return { ...describeMoov(index), faststart: moov.offset < mdat.offset, brand: head.toString('latin1', 8, 12) };
}

/** Reads an MP4's box structure; throws an Mp4Error for anything that is not a whole ISO-BMFF MP4 with video. */
export async function inspectMp4(path: string): Promise<Mp4Info> {
	const file = await open(path, 'r');
	try {
		return await inspectOpen(file);
	} finally {
		await file.close();
	}
}
