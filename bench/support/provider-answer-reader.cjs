// One process of the provider-answers bench: reads a host's image answers through the service's
// own provider client, `stream` (providerImageJson: the image decoded as it arrives) or `whole`
// (providerJson: the answer read whole, parsed, then decoded, as before), and prints its peak
// memory and CPU as JSON. Argument: mode, URL, answers, how many at once.
const { join } = require('node:path');
const providers = join(__dirname, '..', '..', 'server', 'dist', 'server', 'src', 'generation', 'providers');
const { providerImageJson, providerJson } = require(join(providers, 'provider-http.js'));
const { base64Bytes } = require(join(providers, 'image-json.js'));

const [mode, url, answers, atOnce] = [process.argv[2], process.argv[3], Number(process.argv[4]), Number(process.argv[5])];
const peak = { rss: 0, heapUsed: 0, arrayBuffers: 0 };
const sample = () => {
	const usage = process.memoryUsage();
	for (const field of Object.keys(peak)) peak[field] = Math.max(peak[field], usage[field]);
};
const sampler = setInterval(sample, 2);

async function main() {
	const started = process.cpuUsage();
	let left = answers;
	let bytes = 0;
	const read = mode === 'stream' ? providerImageJson : providerJson;
	const reader = async () => {
		while (left-- > 0) {
			const answer = await read({ provider: 'openai', method: 'POST', url, json: { prompt: 'x' }, signal: AbortSignal.timeout(60_000) });
			const image = base64Bytes(answer.data[0].b64_json);
			sample();
			bytes += image.length;
		}
	};
	await Promise.all(Array.from({ length: atOnce }, reader));
	const cpu = process.cpuUsage(started);
	clearInterval(sampler);
	const mb = (value) => Math.round(value / 1e5) / 10;
	process.stdout.write(`${JSON.stringify({ mode, bytes, peakRssMb: mb(peak.rss), peakHeapMb: mb(peak.heapUsed), peakArrayBuffersMb: mb(peak.arrayBuffers), cpuMsPerAnswer: Math.round((cpu.user + cpu.system) / answers / 10) / 100 })}\n`);
}

main().catch((error) => {
	process.stderr.write(`${error.stack}\n`);
	process.exit(1);
});
