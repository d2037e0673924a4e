/**
 * Typed access to the n8n helpers in scripts/n8n/ (plain CommonJS, shared with `npm start`), plus
 * the session every e2e suite needs: a cached n8n, a running imagegen-server, a user folder with
 * the package installed and our credential imported.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from '../../helpers/server';

export interface N8nLayout {
	version: string;
	home: string;
	nodeBin: string;
	n8nMain: string;
}

export interface CommandResult {
	args: string[];
	code: number | null;
	signal: NodeJS.Signals | null;
	stdout: string;
	stderr: string;
}

export interface Editor {
	url: string;
	output(): string;
	stop(): Promise<void>;
}

export interface WorkflowJson {
	id: string;
	name: string;
	nodes: Array<{ name: string; type: string; parameters: Record<string, unknown>; [key: string]: unknown }>;
	connections: Record<string, unknown>;
	[key: string]: unknown;
}

interface RunOptions {
	userFolder: string;
	env?: Record<string, string>;
	timeoutMs?: number;
}

/* eslint-disable @typescript-eslint/no-require-imports */
const install = require('../../../scripts/n8n/install.cjs') as {
	N8N_VERSION: string;
	ensureN8n(options?: { log?: (line: string) => void }): Promise<N8nLayout>;
};
const run = require('../../../scripts/n8n/run.cjs') as {
	runN8nOrThrow(n8n: N8nLayout, args: string[], options: RunOptions): Promise<CommandResult>;
	executeWorkflow(n8n: N8nLayout, id: string, options: RunOptions): Promise<{ run: ExecutionRun; result: CommandResult }>;
	describeFailure(result: CommandResult): string;
	freePort(preferred?: number): Promise<number>;
	startEditor(
		n8n: N8nLayout,
		options: { userFolder: string; port: number; env?: Record<string, string>; readyTimeoutMs?: number },
	): Promise<Editor>;
};
const communityPackage = require('../../../scripts/n8n/community-package.cjs') as {
	installCommunityPackage(userFolder: string): string;
};
export const demo = require('../../../scripts/n8n/demo.cjs') as {
	DEMO_WORKFLOW_ID: string;
	IMAGE_GEN: string;
	IMAGE_GEN_UPLOAD: string;
	credentialFile(options: { apiKey: string; baseUrl: string }): unknown[];
	demoWorkflow(): WorkflowJson;
	trigger(): WorkflowJson['nodes'][number];
	node(name: string, type: string, parameters: Record<string, unknown>, position: [number, number], extra?: Record<string, unknown>): WorkflowJson['nodes'][number];
	imageGenNode(name: string, parameters: Record<string, unknown>, position: [number, number], extra?: Record<string, unknown>): WorkflowJson['nodes'][number];
	uploadNode(name: string, parameters: Record<string, unknown>, position: [number, number], extra?: Record<string, unknown>): WorkflowJson['nodes'][number];
	connect(pairs: Array<[string, string]>): Record<string, unknown>;
	workflow(options: { id: string; name: string; nodes: WorkflowJson['nodes']; connections: Record<string, unknown> }): WorkflowJson;
};
/* eslint-enable @typescript-eslint/no-require-imports */

export const { freePort, startEditor, describeFailure } = run;
export const { ensureN8n } = install;

/** The first run installs n8n (minutes); jest's own timeouts must allow for it. */
export const INSTALL_TIMEOUT_MS = 45 * 60_000;

export interface ItemJson {
	[key: string]: unknown;
}
export interface BinaryMeta {
	mimeType: string;
	fileSize?: string;
	fileName?: string;
	fileExtension?: string;
	id?: string;
	data?: string;
}
export interface Item {
	json: ItemJson;
	binary?: Record<string, BinaryMeta>;
	pairedItem?: { item: number } | Array<{ item: number }>;
}
export interface NodeRun {
	executionStatus?: string;
	error?: { message: string; description?: string };
	data?: { main: Array<Item[] | null> };
}
export interface ExecutionRun {
	status: string;
	data: { resultData: { runData: Record<string, NodeRun[]>; error?: { message: string } } };
}

export interface Session {
	n8n: N8nLayout;
	server: RunningServer;
	userFolder: string;
	/** Runs an n8n CLI command in this session's user folder; throws with n8n's output on failure. */
	cli(args: string[]): Promise<CommandResult>;
	importWorkflows(workflows: WorkflowJson[]): Promise<void>;
	execute(id: string): Promise<{ run: ExecutionRun; result: CommandResult }>;
	close(): Promise<void>;
}

const progress = (line: string) => process.stderr.write(`[e2e] ${line}\n`);

/** An example workflow from examples/, exactly as the README offers it for import. */
export function readExample(file: string): WorkflowJson {
	return JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'examples', file), 'utf8')) as WorkflowJson;
}

/** Hosts a file through the session's service directly (JSON upload), to give workflows inputs. */
export async function hostWithApi(session: Session, body: Record<string, string>): Promise<Record<string, string>> {
	const response = await fetch(`${session.server.baseUrl}/uploads`, {
		method: 'POST',
		headers: { authorization: `Bearer ${session.server.apiKey}`, 'content-type': 'application/json' },
		body: JSON.stringify(body),
	});
	if (response.status !== 200) throw new Error(`hosting an input failed: ${response.status} ${await response.text()}`);
	return (await response.json()) as Record<string, string>;
}

/** `serverArgs`: more options for the service, after `--allow-private-urls`. */
export async function openSession(name: string, serverArgs: string[] = []): Promise<Session> {
	const n8n = await install.ensureN8n({ log: progress });
	// URL inputs in the workflows point at this same loopback server.
	const server = await startServer({ args: ['--allow-private-urls', ...serverArgs] });
	const userFolder = mkdtempSync(join(tmpdir(), `imagegen-e2e-${name}-`));
	try {
		progress(`${name}: installing n8n-nodes-imagegen from its npm pack tarball into ${userFolder}`);
		communityPackage.installCommunityPackage(userFolder);
		const cli = (args: string[]) => run.runN8nOrThrow(n8n, args, { userFolder });
		const credentials = join(userFolder, 'credentials.json');
		writeFileSync(credentials, JSON.stringify(demo.credentialFile({ apiKey: server.apiKey, baseUrl: server.baseUrl })));
		progress(`${name}: importing the imageGenApi credential`);
		await cli(['import:credentials', `--input=${credentials}`]);
		return {
			n8n,
			server,
			userFolder,
			cli,
			importWorkflows: async (workflows) => {
				const file = join(userFolder, `workflows-${Date.now()}.json`);
				writeFileSync(file, JSON.stringify(workflows));
				progress(`${name}: importing ${workflows.length} workflow(s)`);
				await cli(['import:workflow', `--input=${file}`]);
			},
			execute: async (id) => {
				progress(`${name}: n8n execute --id ${id}`);
				return run.executeWorkflow(n8n, id, { userFolder });
			},
			close: async () => {
				await server.stop({ removeData: true });
				rmSync(userFolder, { recursive: true, force: true });
			},
		};
	} catch (error) {
		await server.stop({ removeData: true });
		throw error;
	}
}

/** The items a node put on its first output in its first run, or a failure that shows the run. */
export function outputOf(run: ExecutionRun, nodeName: string, raw: string): Item[] {
	const nodeRun = run.data.resultData.runData[nodeName]?.[0];
	if (!nodeRun) throw new Error(`node "${nodeName}" did not run; n8n printed:\n${raw}`);
	if (nodeRun.error) throw new Error(`node "${nodeName}" failed: ${nodeRun.error.message} ${nodeRun.error.description ?? ''}\n${raw}`);
	return nodeRun.data?.main[0] ?? [];
}
