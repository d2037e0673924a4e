// A model host's JSON answers carrying a 6 MB image as base64 (8 MB, OpenAI's `b64_json`), 4 at
// once, 40 in all, read by the service's provider client in two processes of their own: the image
// decoded as the answer arrives (image-json.ts), against the same answers read whole, parsed and
// then decoded (the baseline, as before). Peak memory and CPU per answer; three rounds, medians;
// under the given Node (run.mjs: this one and Node 24).
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { ROOT, round } from './lib.mjs';

const IMAGE_BYTES = 6_000_000;
const ANSWERS = 40;
const AT_ONCE = 4;
const ROUNDS = 3;
const READER = join(ROOT, 'bench', 'support', 'provider-answer-reader.cjs');

function readAnswers(node, mode, url) {
	return new Promise((resolve, reject) => {
		const child = spawn(node, [READER, mode, url, String(ANSWERS), String(AT_ONCE)], { stdio: ['ignore', 'pipe', 'inherit'] });
		let output = '';
		child.stdout.on('data', (chunk) => (output += chunk));
		child.once('exit', (code) => (code === 0 ? resolve(JSON.parse(output)) : reject(new Error(`${mode} reader exited with ${code}`))));
	});
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

export async function providerAnswersBench({ node = process.execPath } = {}) {
	const image = randomBytes(IMAGE_BYTES);
	const answer = Buffer.from(JSON.stringify({ created: 1_700_000_000, data: [{ b64_json: image.toString('base64') }] }));
	const host = createServer((request, response) => {
		request.resume();
		request.once('end', () => response.writeHead(200, { 'content-type': 'application/json', 'content-length': answer.length }).end(answer));
	});
	await new Promise((resolve) => host.listen(0, '127.0.0.1', resolve));
	const url = `http://127.0.0.1:${host.address().port}/v1/images/generations`;
	try {
		const runs = { stream: [], whole: [] };
		for (let roundIndex = 0; roundIndex < ROUNDS; roundIndex++) {
			for (const mode of ['whole', 'stream']) {
				const run = await readAnswers(node, mode, url);
				if (run.bytes !== IMAGE_BYTES * ANSWERS) throw new Error(`${mode} read ${run.bytes} bytes of images, not ${IMAGE_BYTES * ANSWERS}`);
				runs[mode].push(run);
			}
		}
		const summary = (mode) => Object.fromEntries(['peakRssMb', 'peakHeapMb', 'peakArrayBuffersMb', 'cpuMsPerAnswer'].map((field) => [field, median(runs[mode].map((run) => run[field]))]));
		const [stream, whole] = [summary('stream'), summary('whole')];
		return {
			node: `Node ${execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()}`,
			imageMb: IMAGE_BYTES / 1e6,
			answers: ANSWERS,
			atOnce: AT_ONCE,
			stream,
			whole,
			rssRatio: round(stream.peakRssMb / whole.peakRssMb, 2),
			cpuRatio: round(stream.cpuMsPerAnswer / whole.cpuMsPerAnswer, 2),
			rounds: runs,
		};
	} finally {
		host.close();
	}
}
