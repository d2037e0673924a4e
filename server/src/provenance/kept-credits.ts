/**
 * Who made a picture and who owns its rights, read from the original before a conversion drops
 * every other piece of metadata (GPS positions, device serials, owner names): EXIF Artist and
 * Copyright (IFD0), else XMP dc:creator and dc:rights. They are the uploader's words, unsigned:
 * carried on in the XMP, never into a manifest or an answer.
 */
interface Credits {
	creator?: string;
	copyright?: string;
}

/** The credits, and the IPTC digital source type the original's XMP names (as unsigned as they). */
interface KeptWords extends Credits {
	digitalSourceType?: string;
}

export function keptCredits(exif: Buffer | undefined, xmp: Buffer | undefined): KeptWords {
	const fromExif = exif ? exifCredits(exif) : {};
	const fromXmp = xmp ? xmpWords(xmp.toString('utf8')) : {};
	return { creator: fromExif.creator ?? fromXmp.creator, copyright: fromExif.copyright ?? fromXmp.copyright, digitalSourceType: fromXmp.digitalSourceType };
}

const ARTIST = 0x013b;
const COPYRIGHT = 0x8298;
const ASCII = 2;

/** IFD0 of the TIFF structure inside an EXIF block (as sharp hands it: after "Exif\0\0"). */
function exifCredits(exif: Buffer): Credits {
	const tiff = exif.subarray(0, 6).toString('latin1') === 'Exif\0\0' ? exif.subarray(6) : exif;
	if (tiff.length < 8) return {};
	const little = tiff.toString('latin1', 0, 2) === 'II';
	const u16 = (at: number) => (little ? tiff.readUInt16LE(at) : tiff.readUInt16BE(at));
	const u32 = (at: number) => (little ? tiff.readUInt32LE(at) : tiff.readUInt32BE(at));
	const credits: Credits = {};
	const ifd = u32(4);
	if (ifd + 2 > tiff.length) return {};
	const entries = u16(ifd);
	for (let index = 0; index < entries; index++) {
		const entry = ifd + 2 + index * 12;
		if (entry + 12 > tiff.length) break;
		const tag = u16(entry);
		if ((tag !== ARTIST && tag !== COPYRIGHT) || u16(entry + 2) !== ASCII) continue;
		const count = u32(entry + 4);
		const start = count <= 4 ? entry + 8 : u32(entry + 8);
		if (start + count > tiff.length) continue;
		// Copyright may hold "photographer\0editor"; both parts are kept, joined.
		const text = tiff
			.toString('latin1', start, start + count)
			.split('\0')
			.filter((part) => part.trim() !== '')
			.join(', ')
			.trim();
		if (text === '') continue;
		if (tag === ARTIST) credits.creator = text;
		else credits.copyright = text;
	}
	return credits;
}

/** An IPTC digital source type is a URI: no quotes, markup or spaces. */
const SOURCE_TYPE = /DigitalSourceType\s*(?:=\s*["']|>)\s*([^"'<\s]{1,200})/;

function xmpWords(xmp: string): KeptWords {
	const first = (property: string) => {
		const match = new RegExp(`<dc:${property}>[\\s\\S]*?<rdf:li[^>]*>([\\s\\S]*?)</rdf:li>`).exec(xmp);
		return match ? unescapeXml(match[1]!).trim() || undefined : undefined;
	};
	const sourceType = SOURCE_TYPE.exec(xmp)?.[1];
	return { creator: first('creator'), copyright: first('rights'), digitalSourceType: sourceType ? unescapeXml(sourceType) : undefined };
}

function unescapeXml(text: string): string {
	return text
		.replace(/&#x([0-9a-f]+);/gi, (_, hex: string) => String.fromCodePoint(parseInt(hex, 16)))
		.replace(/&#(\d+);/g, (_, decimal: string) => String.fromCodePoint(Number(decimal)))
		.replace(/&lt;/g, '<')
		.replace(/&gt;/g, '>')
		.replace(/&quot;/g, '"')
		.replace(/&apos;/g, "'")
		.replace(/&amp;/g, '&');
}
