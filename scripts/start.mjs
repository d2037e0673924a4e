// `npm start` (after `npm run build`): the product the way a user meets it. Starts imagegen-server
// with embedded defaults (./data, port 8080 or the next free one) and a local n8n editor
// (.n8n-demo/) with this package installed, an ImageGen API credential pointing at the server and
// a demo workflow; sets up the n8n owner account and prints the editor URL, login and API key, and
// the operator page with where its admin key is kept.
// Ctrl-C stops both. Extra arguments go to imagegen-server, e.g. `npm start -- --retention-seconds 600`.
// Both run on the Node 24 that the n8n cache holds, whichever Node started this script.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync, createWriteStream } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const { ensureN8n, isComplete, N8N_VERSION } = require('./n8n/install.cjs');
const { freePort, runN8nOrThrow, startEditor } = require('./n8n/run.cjs');
const { installCommunityPackage } = require('./n8n/community-package.cjs');
const { credentialFile, demoWorkflow, DEMO_WORKFLOW_ID } = require('./n8n/demo.cjs');
const { setUpOwner } = require('./n8n/owner.cjs');
const { startService } = require('./start-service.cjs');
const { ensureSqliteAddon } = require('./sqlite-addon.cjs');

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bin = join(root, 'server', 'bin', 'imagegen-server.js');
// Both folders can be moved (the start-up test runs in temporary ones).
const dataDir = process.env.IMAGEGEN_DATA_DIR || join(root, 'data');
const userFolder = process.env.IMAGEGEN_N8N_DEMO_DIR || join(root, '.n8n-demo');
const serviceLog = join(userFolder, 'imagegen-server.log');
const say = (line = '') => process.stdout.write(`${line}\n`);
const shown = (path) => relative(process.cwd(), path) || '.';

const children = [];
let stopping = false;
async function stopAll(code) {
	if (stopping) return;
	stopping = true;
	say('\nStopping n8n and imagegen-server…');
	await Promise.all(children.map((stop) => stop().catch(() => undefined)));
	process.exit(code);
}
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => stopAll(0));

async function startServer(nodeBin, port) {
	const service = await startService({
		nodeBin,
		bin,
		args: ['--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, ...process.argv.slice(2)],
		logFile: serviceLog,
		onExit: (code, output) => {
			if (stopping) return;
			say(`imagegen-server exited (${code}); its log is in ${shown(serviceLog)}:\n${output}`);
			stopAll(1);
		},
	});
	children.push(service.stop);
	return service;
}

/** An option's value as imagegen-server reads it: the flag's (the last one wins), else its variable's. */
function given(flag, variable) {
	const args = process.argv.slice(2);
	const at = args.findLastIndex((arg) => arg === `--${flag}` || arg.startsWith(`--${flag}=`));
	const value = at < 0 ? process.env[variable] : args[at].includes('=') ? args[at].slice(args[at].indexOf('=') + 1) : args[at + 1];
	return value?.trim() || undefined;
}

/** A key given on the command line or in the environment wins over the one kept in ./data. */
function configuredApiKey() {
	return given('api-keys', 'IMAGEGEN_API_KEYS')?.split(',')[0]?.trim() || undefined;
}

/**
 * Where the operator page's key is: the one given, or the one the service keeps in the data dir;
 * undefined with `--admin-key none` (no operator page). A given key is not printed.
 */
function adminKeyWhereabouts() {
	const adminKey = given('admin-key', 'IMAGEGEN_ADMIN_KEY');
	if (adminKey === 'none') return undefined;
	return adminKey === undefined ? `admin key in ${shown(join(dataDir, 'admin-key'))}` : 'admin key you gave';
}

/** The owner login for this demo folder: created once, kept next to n8n's data. */
function demoLogin() {
	const file = join(userFolder, 'login.json');
	if (existsSync(file)) return JSON.parse(readFileSync(file, 'utf8'));
	const login = { email: 'owner@imagegen.example', password: `Demo-${randomBytes(9).toString('base64url')}1` };
	writeFileSync(file, JSON.stringify(login, null, '\t'), { mode: 0o600 });
	return login;
}

async function main() {
	mkdirSync(userFolder, { recursive: true });
	if (!isComplete()) {
		say(`First run: installing n8n ${N8N_VERSION} into ~/.cache/imagegen-n8n (≈ 10 min and ≈ 3 GB, once).`);
	}
	const n8n = await ensureN8n({ log: say });
	ensureSqliteAddon({ nodeBin: n8n.nodeBin, log: say });

	const server = await startServer(n8n.nodeBin, await freePort(8080));
	const apiKey = configuredApiKey() ?? readFileSync(join(dataDir, 'api-key'), 'utf8').trim();
	say(`imagegen-server is running at ${server.origin}`);

	say(`Installing n8n-nodes-imagegen into ${shown(userFolder)}/ (as n8n installs a community package)…`);
	installCommunityPackage(userFolder);
	const credentials = join(userFolder, 'credentials.json');
	// Refreshed on every start: the port and key may have changed since the last one.
	writeFileSync(credentials, JSON.stringify(credentialFile({ apiKey, baseUrl: `${server.origin}/v1` })), { mode: 0o600 });
	await runN8nOrThrow(n8n, ['import:credentials', `--input=${credentials}`], { userFolder });
	const imported = join(userFolder, 'demo-workflow-imported');
	// Imported once, so a user's own changes to the demo survive restarts.
	if (!existsSync(imported)) {
		const workflowFile = join(userFolder, 'demo-workflow.json');
		writeFileSync(workflowFile, JSON.stringify([demoWorkflow()]));
		await runN8nOrThrow(n8n, ['import:workflow', `--input=${workflowFile}`], { userFolder });
		writeFileSync(imported, new Date().toISOString());
	}

	say('Starting n8n…');
	const log = createWriteStream(join(userFolder, 'n8n.log'), { flags: 'a' });
	const editor = await startEditor(n8n, { userFolder, port: await freePort(5678), onOutput: (chunk) => log.write(chunk) });
	children.unshift(editor.stop);
	editor.process.once('exit', (code) => {
		if (!stopping) {
			say(`n8n exited (${code}); its log is in ${shown(join(userFolder, 'n8n.log'))}:\n${editor.output().split('\n').slice(-30).join('\n')}`);
			stopAll(1);
		}
	});
	const login = demoLogin();
	await setUpOwner(editor.url, login);

	say('');
	say('Ready.');
	say(`  n8n editor:     ${editor.url}/workflow/${DEMO_WORKFLOW_ID}   (demo workflow: generate → edit → upload)`);
	say(`  n8n login:      ${login.email} / ${login.password}`);
	say(`  ImageGen API:   ${server.origin}/v1   (credential "ImageGen (local server)" is set up in n8n)`);
	say(`  API key:        ${apiKey}`);
	const adminKey = adminKeyWhereabouts();
	if (adminKey !== undefined) say(`  Operator page:  ${server.origin}/admin   (sign in with the ${adminKey})`);
	say(`  Logs:           ${shown(join(userFolder, 'n8n.log'))}, ${shown(serviceLog)}`);
	say('Press Ctrl-C to stop both.');
}

main().catch((error) => {
	process.stderr.write(`${error.stack ?? error}\n`);
	stopAll(1);
});
