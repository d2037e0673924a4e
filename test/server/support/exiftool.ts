/**
 * ExifTool (Phil Harvey's, the Perl original shipped by exiftool-vendored.pl) reading bytes from
 * stdin: the metadata as the most widely used reader sees it, grouped by family-1 group
 * (`XMP-iptcExt:DigitalSourceType`, `IFD0:Artist`, `GPS:GPSLatitude`, …).
 */
import { spawn } from 'node:child_process';

const EXIFTOOL = require.resolve('exiftool-vendored.pl/bin/exiftool');

export async function exiftool(bytes: Buffer): Promise<Record<string, unknown>> {
	const out = await run(['-j', '-G1', '-a', '-n', '-'], bytes);
	return (JSON.parse(out.toString()) as Record<string, unknown>[])[0]!;
}

/** The bytes with tags written by ExifTool, e.g. `['-Artist=Alice', '-GPSLatitude=48.8']`. */
export function exiftoolWrite(bytes: Buffer, assignments: string[]): Promise<Buffer> {
	return run(['-q', ...assignments, '-'], bytes);
}

async function run(args: string[], input: Buffer): Promise<Buffer> {
	const child = spawn('perl', [EXIFTOOL, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
	const out: Buffer[] = [];
	let err = '';
	child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
	child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
	child.stdin.end(input);
	const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
	if (code !== 0) throw new Error(`exiftool exited with ${code}: ${err}`);
	return Buffer.concat(out);
}
