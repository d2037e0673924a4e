// `node scripts/on-line.mjs --line 22|24 <script> [arguments]`: a Node script under a supported
// line's Node from npm (scripts/node-line.cjs), whichever Node started it, with that Node first on
// PATH so that what the script starts by name (the service's bin through its `env node` line, npm)
// runs on it too. `npm run bench` runs bench/run.mjs this way; scripts/test-lines.mjs does the same
// for Jest.
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { nodeOfLine, withNodeFirst } = require('./node-line.cjs');

const [flag, line, script, ...args] = process.argv.slice(2);
if (flag !== '--line' || !script) {
	process.stderr.write('usage: node scripts/on-line.mjs --line 22|24 <script> [arguments]\n');
	process.exit(2);
}
const nodeBin = await nodeOfLine(line);
const child = spawn(nodeBin, [script, ...args], { stdio: 'inherit', env: withNodeFirst(nodeBin) });
// Ctrl-C reaches the child from the terminal itself: this process waits for the child's exit code.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => child.kill('SIGTERM'));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
