/**
 * The XMP packet goes into the container without touching a pixel, replacing any packet already
 * there, in every variant of the three formats: read back by ExifTool, decoded by libvips.
 */
import sharp from 'sharp';
import { MEDIA_DETAILS } from '../../../core/media';
import { embedXmp } from '../../../server/src/provenance/embed-xmp';
import { xmpPacket } from '../../../server/src/provenance/xmp-packet';
import { exiftool } from '../support/exiftool';

const packet = (model: string) => xmpPacket({ digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia', model });
const picture = () => sharp({ create: { width: 70, height: 45, channels: 4, background: { r: 10, g: 200, b: 90, alpha: 0.5 } } });

it.each([
	['PNG', 'png', () => picture().png().toBuffer()],
	['PNG with XMP already', 'png', () => picture().png().withXmp(packet('old-model')).toBuffer()],
	['JPEG (JFIF)', 'jpeg', () => picture().jpeg().toBuffer()],
	['JPEG with EXIF and XMP already', 'jpeg', () => picture().jpeg().withExif({ IFD0: { Artist: 'Alice' } }).withXmp(packet('old-model')).toBuffer()],
	['WebP lossy (VP8, alpha in ALPH)', 'webp', () => picture().webp().toBuffer()],
	['WebP lossless (VP8L)', 'webp', () => picture().webp({ lossless: true }).toBuffer()],
	['WebP lossy without alpha (simple VP8)', 'webp', () => picture().flatten().webp().toBuffer()],
	['WebP with XMP already (VP8X)', 'webp', () => picture().webp().withXmp(packet('old-model')).toBuffer()],
] as const)('%s: one packet, ours; the same pixels', async (_, type, make) => {
	const original = await make();
	const marked = embedXmp(original, MEDIA_DETAILS[type], packet('p-image'));
	const tags = await exiftool(marked);
	expect(tags['XMP-iptcExt:AISystemUsed']).toBe('p-image');
	expect(tags.Warning).toBeUndefined();
	expect(JSON.stringify(tags)).not.toContain('old-model');
	const [before, after] = await Promise.all([sharp(original).raw().toBuffer({ resolveWithObject: true }), sharp(marked).raw().toBuffer({ resolveWithObject: true })]);
	expect(after.info).toEqual(before.info);
	expect(after.data.equals(before.data)).toBe(true);
});
