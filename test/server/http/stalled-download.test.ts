/**
 * A client that asks for a large file and then reads nothing: the answer waits in the socket, and
 * that silence is the client's, not the server's. The connection is closed after the idle timeout,
 * so neither the connection nor a shutdown is held for ever.
 */
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { sniffMedia } from '../../../core/media';
import { startInProcessServer } from '../support/app';
import { makeMp4 } from '../support/media';

/** Far more than loopback's socket buffers hold on both ends: most of the file must wait for the reader. */
const LARGE_BYTES = 48 * 1024 * 1024;

test("a download the client stopped reading is closed after the idle timeout and does not hold the service's close", async () => {
	const server = await startInProcessServer({ args: ['--idle-timeout-seconds', '1', '--log-level', 'silent'] });
	let reader: Socket | undefined;
	try {
		// Stored directly, not uploaded: with an idle timeout this short, an upload slowed by a busy
		// disk would itself be cut.
		const video = makeMp4(LARGE_BYTES);
		const stored = await server.app.hostedFiles.putBuffer(video, sniffMedia(video)!, 'a-key');
		const url = new URL(server.app.hostedFiles.publicUrl(stored));
		reader = connect(Number(url.port), url.hostname);
		await once(reader, 'connect');
		reader.pause();
		reader.on('error', () => undefined);
		reader.write(`GET ${url.pathname} HTTP/1.1\r\nHost: ${url.host}\r\n\r\n`);
		// The answer has started and filled the sockets by now; the reader never reads.
		await sleep(300);
		const closing = server.stop({ removeData: true });
		const waited = new AbortController();
		const outcome = await Promise.race([closing.then(() => 'closed'), sleep(10_000, 'still open', { signal: waited.signal })]);
		waited.abort();
		expect(outcome).toBe('closed');
	} finally {
		reader?.destroy();
		await server.stop({ removeData: true });
	}
});
