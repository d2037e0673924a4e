/**
 * `npm start` as a user runs it (minus the build, which `npm test` has done): the service and an
 * n8n editor come up, the printed login, API key and URLs work, the operator page is printed with
 * where its admin key is kept (made on the first start), the package's nodes are loaded,
 * the demo workflow and credential are there, the service runs on n8n's Node 24, and Ctrl-C stops
 * both. Runs in temporary folders.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { unsupportedNodeOnMachine } from '../helpers/node-versions';
import { demo, ensureN8n, INSTALL_TIMEOUT_MS } from './support/n8n';

const START = join(__dirname, '..', '..', 'scripts', 'start.mjs');
// Started by a Node the packages do not support when this machine has one, as the README's
// `npm start` may be: the service must run on a supported Node all the same.
const LAUNCHER = unsupportedNodeOnMachine()?.path ?? process.execPath;

let folder: string;
let child: ChildProcess;
let output = '';
let printed: { editor: string; email: string; password: string; api: string; key: string; operatorPage: string; adminKeyFile: string };

function field(label: string): string {
	const match = new RegExp(`${label}:\\s+(\\S+)(?: / (\\S+))?`).exec(output);
	if (!match) throw new Error(`npm start did not print "${label}":\n${output}`);
	return match[2] ? `${match[1]} ${match[2]}` : match[1]!;
}

beforeAll(async () => {
	folder = mkdtempSync(join(tmpdir(), 'imagegen-start-'));
	child = spawn(LAUNCHER, [START], {
		env: { ...process.env, IMAGEGEN_DATA_DIR: join(folder, 'data'), IMAGEGEN_N8N_DEMO_DIR: join(folder, 'n8n') },
		stdio: ['ignore', 'pipe', 'pipe'],
	});
	child.stdout!.on('data', (chunk: Buffer) => {
		output += chunk;
		process.stderr.write(`[npm start] ${chunk}`);
	});
	child.stderr!.on('data', (chunk: Buffer) => (output += chunk));
	await new Promise<void>((resolve, reject) => {
		child.stdout!.on('data', () => output.includes('Press Ctrl-C') && resolve());
		child.once('exit', (code) => reject(new Error(`npm start exited (${code}) before it was ready:\n${output}`)));
	});
	const [email, password] = field('n8n login').split(' ') as [string, string];
	const operator = /Operator page:\s+(\S+)\s+\(sign in with the admin key in (\S+)\)/.exec(output);
	if (!operator) throw new Error(`npm start did not print the operator page and its admin key's file:\n${output}`);
	printed = { editor: field('n8n editor'), email, password, api: field('ImageGen API'), key: field('API key'), operatorPage: operator[1]!, adminKeyFile: resolve(operator[2]!) };
}, INSTALL_TIMEOUT_MS);

afterAll(async () => {
	if (child && child.exitCode === null && child.signalCode === null) {
		child.kill('SIGKILL');
	}
	rmSync(folder, { recursive: true, force: true });
});

async function signIn(origin: string): Promise<string> {
	const response = await fetch(`${origin}/rest/login`, {
		method: 'POST',
		headers: { 'content-type': 'application/json' },
		body: JSON.stringify({ emailOrLdapLoginId: printed.email, password: printed.password }),
	});
	expect(response.status).toBe(200);
	return (response.headers.get('set-cookie') ?? '').split(';')[0]!;
}

test('the printed API key works against the printed service URL', async () => {
	const response = await fetch(`${printed.api}/models`, { headers: { authorization: `Bearer ${printed.key}` } });
	expect(response.status).toBe(200);
});

/** The admin key, read where the Ready block says it is kept. */
const adminKey = () => readFileSync(printed.adminKeyFile, 'utf8').trim();

test('the printed operator page answers, and the admin key kept where the Ready block says opens the admin API', async () => {
	expect(printed.operatorPage).toBe(`${printed.api.replace(/\/v1$/, '')}/admin`);
	expect(printed.adminKeyFile).toBe(join(folder, 'data', 'admin-key'));
	const page = await fetch(printed.operatorPage);
	expect(page.status).toBe(200);
	expect(page.headers.get('content-type')).toMatch(/^text\/html/);
	const keys = await fetch(`${printed.api}/admin/keys`, { headers: { authorization: `Bearer ${adminKey()}` } });
	expect(keys.status).toBe(200);
	expect(output).not.toContain(adminKey());
});

test(`the service runs on the Node 24 that n8n runs on (npm start started by ${LAUNCHER})`, async () => {
	const { nodeBin } = await ensureN8n({ log: () => undefined });
	const expected = execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim();
	const metrics = await fetch(`${printed.api.replace(/\/v1$/, '')}/metrics`, { headers: { authorization: `Bearer ${adminKey()}` } });
	expect(metrics.status).toBe(200);
	expect(await metrics.text()).toContain(`nodejs_version_info{version="${expected}"`);
});

test('the printed login opens the editor, with the demo workflow wired to the package and the credential', async () => {
	const url = new URL(printed.editor);
	expect(url.hostname).toBe('127.0.0.1');
	expect(url.pathname).toBe(`/workflow/${demo.DEMO_WORKFLOW_ID}`);
	const cookie = await signIn(url.origin);
	const response = await fetch(`${url.origin}/rest/workflows/${demo.DEMO_WORKFLOW_ID}`, { headers: { cookie } });
	expect(response.status).toBe(200);
	const { data } = (await response.json()) as { data: { nodes: Array<{ type: string; credentials?: Record<string, { id: string }> }> } };
	const types = data.nodes.map((node) => node.type);
	expect(types).toEqual(expect.arrayContaining([demo.IMAGE_GEN, demo.IMAGE_GEN_UPLOAD]));
	const credentials = await fetch(`${url.origin}/rest/credentials`, { headers: { cookie } });
	const list = (await credentials.json()) as { data: Array<{ id: string; type: string }> };
	expect(list.data).toEqual(expect.arrayContaining([expect.objectContaining({ type: 'imageGenApi' })]));
});

test('the running editor has loaded both nodes and the credential type from the installed package', async () => {
	const origin = new URL(printed.editor).origin;
	const cookie = await signIn(origin);
	const nodes = await (await fetch(`${origin}/types/nodes.json`, { headers: { cookie } })).json() as Array<{ name: string }>;
	const names = nodes.map((node) => node.name);
	expect(names).toEqual(expect.arrayContaining([demo.IMAGE_GEN, demo.IMAGE_GEN_UPLOAD]));
	const credentials = await (await fetch(`${origin}/types/credentials.json`, { headers: { cookie } })).json() as Array<{ name: string }>;
	expect(credentials.map((credential) => credential.name)).toContain('imageGenApi');
});

test('Ctrl-C stops n8n and the service', async () => {
	const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
	child.kill('SIGINT');
	await expect(exited).resolves.toBe(0);
	await expect(fetch(`${new URL(printed.editor).origin}/healthz`)).rejects.toThrow();
	await expect(fetch(`${printed.api.replace(/\/v1$/, '')}/healthz`)).rejects.toThrow();
}, 60_000);
