/**
 * ExifTool (Phil Harvey's, the Perl original shipped by exiftool-vendored.pl) reading bytes from
 * stdin: the metadata as the most widely used reader sees it, grouped by family-1 group
 * (`XMP-iptcExt:DigitalSourceType`, `IFD0:Artist`, `GPS:GPSLatitude`, …).
 */
import { spawn } from 'node:child_process';

const EXIFTOOL = require.resolve('exiftool-vendored.pl/bin/exiftool');

export async function exiftool(bytes: Buffer): Promise<Record<string, unknown>> {
	const child = spawn('perl', [EXIFTOOL, '-j', '-G1', '-a', '-n', '-'], { stdio: ['pipe', 'pipe', 'pipe'] });
	let out = '';
	let err = '';
	child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
	child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
	child.stdin.end(bytes);
	const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
	if (code !== 0) throw new Error(`exiftool exited with ${code}: ${err}`);
	return (JSON.parse(out) as Record<string, unknown>[])[0]!;
}
