// `npm start`: runs the built imagegen-server with embedded defaults (./data, port 8080) and
// passes any extra arguments through, e.g. `npm start -- --port 9000`.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const cli = join(root, 'server', 'dist', 'server', 'src', 'cli.js');
const defaults = ['--host', '127.0.0.1', '--port', '8080', '--data-dir', join(root, 'data')];
const server = spawn(process.execPath, [cli, ...defaults, ...process.argv.slice(2)], { stdio: 'inherit' });

for (const signal of ['SIGINT', 'SIGTERM']) {
	process.on(signal, () => server.kill(signal));
}
server.on('exit', (code, signal) => process.exit(code ?? (signal ? 0 : 1)));
