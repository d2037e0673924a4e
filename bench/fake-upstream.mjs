// A model host that implements this service's own API (the `upstream` provider's contract) and
// answers every generation with the same ready image after a fixed delay (0 = instantly). The
// image is a flat 1024 px PNG (16 KB), or with `noise` a 1024 px greyscale PNG of noise (≈ 1.1 MB),
// the size of what real model hosts return.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import sharp from 'sharp';

const delayMs = Number(process.argv[2] ?? 0);
const png =
	process.argv[3] === 'noise'
		? await sharp(randomBytes(1024 * 1024), { raw: { width: 1024, height: 1024, channels: 1 } }).toColourspace('b-w').png({ compressionLevel: 1 }).toBuffer()
		: await sharp({ create: { width: 1024, height: 1024, channels: 3, background: '#3050a0' } }).png().toBuffer();
const answer = JSON.stringify({ created: 0, model: 'p-image', output_format: 'png', data: [{ b64_json: png.toString('base64') }], usage: { images: 1, cost_usd: 0.0035 } });
const server = http.createServer((request, response) => {
	request.resume();
	request.on('end', () => {
		const send = () => response.writeHead(200, { 'content-type': 'application/json' }).end(answer);
		if (delayMs > 0) setTimeout(send, delayMs);
		else send();
	});
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
