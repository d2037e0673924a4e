// Baseline for the upload benchmark: the least a Node server can do with an upload, which is to
// pipe the request body into a file and answer 200.
import { createWriteStream } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';

const directory = process.argv[2];
let count = 0;
const server = http.createServer(async (request, response) => {
	await pipeline(request, createWriteStream(join(directory, `upload-${count++}`)));
	response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
});
server.listen(0, '127.0.0.1', () => process.stdout.write(`listening on http://127.0.0.1:${server.address().port}\n`));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
