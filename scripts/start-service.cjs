// Starts imagegen-server for `npm start` and keeps its log: everything the service writes, from
// the first line on (the start-up banner, then its JSON log lines, stack traces on stderr), goes
// to `logFile`; stderr is also shown in the terminal. Resolves when the service is listening.
// The service is started as its users start it: its bin, run by `nodeBin` (the `node` it finds on
// PATH), which gives the process its start settings (server/bin/imagegen-server.js).
'use strict';
const { spawn } = require('node:child_process');
const { createWriteStream } = require('node:fs');
const { delimiter, dirname } = require('node:path');

/**
 * `bin` is the service's bin file; `nodeBin` runs it (a supported Node, whichever Node runs this
 * script). `onExit(code, output)` is called when the service exits after it was ready; `output` is
 * what it wrote until then (stdout and stderr), also in the error when it exits before.
 */
function startService({ nodeBin = process.execPath, bin, args, logFile, onExit = () => undefined }) {
	const env = { ...process.env, PATH: `${dirname(nodeBin)}${delimiter}${process.env.PATH ?? ''}` };
	const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
	const log = createWriteStream(logFile, { flags: 'a' });
	child.stdout.pipe(log, { end: false });
	child.stderr.pipe(log, { end: false });
	let output = '';
	child.stderr.on('data', (chunk) => {
		output += chunk;
		process.stderr.write(chunk);
	});
	const stop = () =>
		new Promise((resolve) => {
			if (child.exitCode !== null || child.signalCode !== null) return resolve();
			child.once('exit', resolve);
			child.kill('SIGTERM');
		});
	// Closed only once both pipes are drained: the service's last lines (its shutdown) are kept.
	let open = 2;
	for (const stream of [child.stdout, child.stderr]) stream.once('end', () => --open === 0 && log.end());
	return new Promise((resolve, reject) => {
		let ready = false;
		const onData = (chunk) => {
			output += chunk;
			const listening = /^imagegen-server listening on (http:\/\/\S+)/m.exec(output);
			if (!listening) return;
			ready = true;
			child.stdout.off('data', onData);
			resolve({ origin: listening[1].replace(/\/$/, ''), output, stop, process: child, logClosed: new Promise((done) => log.once('close', done)) });
		};
		child.stdout.on('data', onData);
		child.once('exit', (code) => {
			if (ready) onExit(code, output);
			else reject(new Error(`imagegen-server exited (${code}) before it was ready:\n${output}`));
		});
	});
}

module.exports = { startService };
