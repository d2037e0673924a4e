/**
 * Runs workflows through n8n's own engine (n8n-core's WorkflowExecute) with the real node classes,
 * real credential authentication (the credential's `authenticate` resolved by n8n's expression
 * engine) and real binary data handling (n8n's BinaryDataService in filesystem or in-memory mode).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BinaryDataConfig, BinaryDataService, ExecutionLifecycleHooks, WorkflowExecute } from 'n8n-core';
import {
	ICredentialsHelper,
	LoggerProxy,
	Workflow,
	type IAuthenticateGeneric,
	type ICredentialDataDecryptedObject,
	type IConnections,
	type ICredentials,
	type IExecuteFunctions,
	type IHttpRequestOptions,
	type INode,
	type INodeExecutionData,
	type INodeProperties,
	type INodeType,
	type INodeTypes,
	type IRun,
	type IRunExecutionData,
	type IVersionedNodeType,
	type IWorkflowExecuteAdditionalData,
} from 'n8n-workflow';

import { ImageGenApi } from '../../../credentials/ImageGenApi.credentials';
import { ImageGen } from '../../../nodes/ImageGen/ImageGen.node';
import { ImageGenUpload } from '../../../nodes/ImageGenUpload/ImageGenUpload.node';

export const IMAGE_GEN = 'n8n-nodes-imagegen.imageGen';
export const IMAGE_GEN_UPLOAD = 'n8n-nodes-imagegen.imageGenUpload';
export const SEED = 'test.seed';

export interface SeedItem {
	json?: Record<string, unknown>;
	/** Binary properties, each created through n8n's prepareBinaryData as a real node would. */
	binary?: Record<string, { bytes: Buffer; fileName?: string; mimeType?: string }>;
}

/**
 * The first node of every test workflow: it emits the items a test needs, with binary data stored
 * by n8n's binary data service, the way a Read File or HTTP Request node would hand them on.
 */
export function seedNodeType(itemsByName: Map<string, SeedItem[]>): INodeType {
	return {
		description: {
			displayName: 'Seed',
			name: 'seed',
			group: ['input'],
			version: 1,
			description: 'Emits test items',
			defaults: { name: 'Seed' },
			inputs: ['main'],
			outputs: ['main'],
			properties: [] as INodeProperties[],
		},
		async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
			const items = itemsByName.get(this.getNode().name) ?? [{ json: {} }];
			const output: INodeExecutionData[] = [];
			for (const item of items) {
				const binary: INodeExecutionData['binary'] = {};
				for (const [property, file] of Object.entries(item.binary ?? {})) {
					binary[property] = await this.helpers.prepareBinaryData(file.bytes, file.fileName, file.mimeType);
				}
				output.push({ json: (item.json ?? {}) as INodeExecutionData['json'], ...(item.binary ? { binary } : {}) });
			}
			return [output];
		},
	};
}

class TestNodeTypes implements INodeTypes {
	constructor(private readonly types: Record<string, INodeType>) {}

	getByName(nodeType: string): INodeType | IVersionedNodeType {
		return this.getByNameAndVersion(nodeType);
	}

	getByNameAndVersion(nodeType: string): INodeType {
		const type = this.types[nodeType];
		if (!type) throw new Error(`Unknown node type ${nodeType}`);
		return type;
	}

	getKnownTypes() {
		return {};
	}
}

/**
 * Hands the stored credential to the engine and applies the credential type's own `authenticate`
 * block, with its expressions resolved by n8n's expression engine as n8n's server does.
 */
class TestCredentialsHelper extends ICredentialsHelper {
	private readonly credentialType = new ImageGenApi();

	constructor(private readonly data: ICredentialDataDecryptedObject) {
		super();
	}

	getParentTypes(): string[] {
		return [];
	}

	isCredentialUsableByNode(): boolean {
		return true;
	}

	async authenticate(
		credentials: ICredentialDataDecryptedObject,
		typeName: string,
		requestOptions: IHttpRequestOptions,
		workflow?: Workflow,
		node?: INode,
	): Promise<IHttpRequestOptions> {
		if (typeName !== this.credentialType.name) throw new Error(`Unexpected credential type ${typeName}`);
		const authenticate = this.credentialType.authenticate as IAuthenticateGeneric;
		const headers = { ...(requestOptions.headers ?? {}) } as Record<string, unknown>;
		for (const [name, value] of Object.entries(authenticate.properties.headers ?? {})) {
			headers[name] = workflow!.expression.getSimpleParameterValue(node!, value as string, 'internal', { $credentials: credentials });
		}
		return { ...requestOptions, headers } as IHttpRequestOptions;
	}

	async preAuthentication() {
		return undefined;
	}

	async runPreAuthentication() {
		return undefined;
	}

	async getCredentials(): Promise<ICredentials> {
		throw new Error('not used by these nodes');
	}

	async getDecrypted(): Promise<ICredentialDataDecryptedObject> {
		return this.data;
	}

	async updateCredentials() {}

	async updateCredentialsOauthTokenData() {}

	getCredentialsProperties(): INodeProperties[] {
		return this.credentialType.properties;
	}
}

// n8n-core looks its services up in its own copy of @n8n/di; the service has to be registered there.
const { Container } = createRequire(require.resolve('n8n-core'))('@n8n/di') as typeof import('@n8n/di');

// n8n's own logger reports every node failure on stdout; the tests assert on those failures.
process.env.N8N_LOG_LEVEL ??= 'silent';

const quiet = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };
const logger = { ...quiet, scoped: () => logger };
// The engine logs every node failure; the tests assert on those failures instead.
LoggerProxy.init(logger as never);

let binaryData: Promise<BinaryDataService> | undefined;
let binaryDataDir: string | undefined;

/** Where n8n's binary data service keeps files in filesystem mode (after the first run). */
export function binaryStorePath(): string {
	if (!binaryDataDir) throw new Error('the binary data service has not started: run a workflow first');
	return binaryDataDir;
}

/**
 * n8n's binary data service in a mode n8n runs with: `filesystem` (n8n's default: binaries are
 * stored on disk and read back as streams) or `default` (kept in memory, base64 in the item).
 */
export async function initBinaryData(mode: 'filesystem' | 'default' = 'filesystem'): Promise<BinaryDataService> {
	binaryData ??= (async () => {
		binaryDataDir = mkdtempSync(join(tmpdir(), 'imagegen-n8n-binary-'));
		const config = {
			mode,
			availableModes: [mode],
			localStoragePath: binaryDataDir,
			signingSecret: 'test-signing-secret',
		} as unknown as BinaryDataConfig;
		const service = new BinaryDataService(config, quiet as never, logger as never);
		await service.init();
		Container.set(BinaryDataService, service);
		return service;
	})();
	return await binaryData;
}

export interface WorkflowNode {
	name: string;
	type: string;
	parameters?: Record<string, unknown>;
	onError?: INode['onError'];
	/** Connect this node's input to these nodes' main output (default: the previous node). */
	after?: string;
	/** Also connect this node's input to output `output` of `node`, e.g. to close a loop. */
	alsoAfter?: { node: string; output: number };
	/** n8n's "Retry On Fail" node setting. */
	retry?: { maxTries: number; waitBetweenTries?: number };
}

export interface RunOptions {
	/** As saved in n8n: `serviceType` is absent from credentials saved before the option existed. */
	credentials: { apiKey: string; baseUrl: string; serviceType?: string };
	seed?: SeedItem[];
	nodes: WorkflowNode[];
	binaryMode?: 'filesystem' | 'default';
	/** The execution's id, as n8n gives every run one (default: a new one per run). */
	executionId?: string;
	/** Where `$execution.resumeUrl` points, before the execution's id (default http://127.0.0.1/webhook-waiting). */
	webhookWaitingBaseUrl?: string;
	/** n8n's resume token of a waiting execution, which it appends to `$execution.resumeUrl` as `?signature=`. */
	resumeToken?: string;
	/** Node classes to run instead of the ones built from source, by node type (e.g. a built copy). */
	nodeTypes?: Record<string, INodeType>;
}

export interface RunResult {
	run: IRun;
	/** The items a node emitted on its first output. */
	output(nodeName: string): INodeExecutionData[];
	/** The error a node failed with, if any. */
	error(nodeName?: string): (Error & { description?: string; httpCode?: string }) | undefined;
}

/** Builds a workflow `Seed → nodes…` (each node after the previous one unless told otherwise) and runs it. */
export async function runWorkflow(options: RunOptions): Promise<RunResult> {
	await initBinaryData(options.binaryMode);
	const seeds = new Map<string, SeedItem[]>([['Seed', options.seed ?? [{ json: {} }]]]);
	const nodeTypes = new TestNodeTypes({
		[SEED]: seedNodeType(seeds),
		[IMAGE_GEN]: new ImageGen(),
		[IMAGE_GEN_UPLOAD]: new ImageGenUpload(),
		...options.nodeTypes,
	});
	const credentialsReference = { imageGenApi: { id: 'imageGen1', name: 'ImageGen' } };
	const nodes: INode[] = [
		{ id: 'seed', name: 'Seed', type: SEED, typeVersion: 1, position: [0, 0], parameters: {} },
		...options.nodes.map<INode>((node, index) => ({
			id: `node-${index}`,
			name: node.name,
			type: node.type,
			typeVersion: 1,
			position: [240 * (index + 1), 0],
			parameters: (node.parameters ?? {}) as INode['parameters'],
			credentials: node.type === SEED ? undefined : credentialsReference,
			...(node.onError ? { onError: node.onError } : {}),
			// n8n takes a Wait Between Tries of 0 for its default of 1,000 ms (`waitBetweenTries || 1000`).
			...(node.retry ? { retryOnFail: true, maxTries: node.retry.maxTries, waitBetweenTries: node.retry.waitBetweenTries ?? 10 } : {}),
		})),
	];
	const connections: IConnections = {};
	options.nodes.forEach((node, index) => {
		const from = node.after ?? (index === 0 ? 'Seed' : options.nodes[index - 1]!.name);
		const outputs = (connections[from] ??= { main: [[]] });
		outputs.main![0]!.push({ node: node.name, type: 'main', index: 0 });
		if (node.alsoAfter) {
			const main = ((connections[node.alsoAfter.node] ??= { main: [] }).main ??= []);
			while (main.length <= node.alsoAfter.output) main.push([]);
			main[node.alsoAfter.output]!.push({ node: node.name, type: 'main', index: 0 });
		}
	});
	const workflow = new Workflow({ id: 'test', nodes, connections, nodeTypes, active: false, settings: { executionOrder: 'v1' } });

	const executionId = options.executionId ?? randomUUID();
	const hooks = new ExecutionLifecycleHooks('manual', executionId, { id: 'test', name: 'test', nodes, connections, active: false } as never);
	let finish: (run: IRun) => void = () => undefined;
	const finished = new Promise<IRun>((resolve) => (finish = resolve));
	hooks.addHandler('workflowExecuteAfter', (run) => finish(run));
	const additionalData = {
		hooks,
		executionId,
		credentialsHelper: new TestCredentialsHelper(options.credentials),
		currentNodeExecutionIndex: 0,
		restApiUrl: 'http://127.0.0.1/rest',
		instanceBaseUrl: 'http://127.0.0.1/',
		webhookBaseUrl: 'http://127.0.0.1/webhook',
		webhookWaitingBaseUrl: options.webhookWaitingBaseUrl ?? 'http://127.0.0.1/webhook-waiting',
		webhookTestBaseUrl: 'http://127.0.0.1/webhook-test',
		formBaseUrl: 'http://127.0.0.1/form',
		formWaitingBaseUrl: 'http://127.0.0.1/form-waiting',
		formTestBaseUrl: 'http://127.0.0.1/form-test',
		variables: {},
		executionTimeoutTimestamp: undefined,
		logAiEvent: () => undefined,
	} as unknown as IWorkflowExecuteAdditionalData;

	const runExecutionData: IRunExecutionData = {
		...(options.resumeToken ? { resumeToken: options.resumeToken } : {}),
		resultData: { runData: {} },
		executionData: {
			contextData: {},
			metadata: {},
			nodeExecutionStack: [{ node: nodes[0]!, data: { main: [[{ json: {} }]] }, source: null }],
			waitingExecution: {},
			waitingExecutionSource: null,
		},
	} as unknown as IRunExecutionData;
	await new WorkflowExecute(additionalData, 'manual', runExecutionData).processRunExecutionData(workflow);
	const run = await finished;
	const runData = run.data.resultData.runData;
	return {
		run,
		output: (nodeName) => runData[nodeName]?.[0]?.data?.main?.[0] ?? [],
		error: (nodeName) =>
			(nodeName ? runData[nodeName]?.[0]?.error : run.data.resultData.error) as ReturnType<RunResult['error']>,
	};
}

/** The bytes of a binary property of an output item, read back through n8n's binary data service. */
export async function binaryBytes(item: INodeExecutionData, property = 'data'): Promise<Buffer> {
	const binary = item.binary?.[property];
	if (!binary) throw new Error(`item has no binary property '${property}'`);
	return await Container.get(BinaryDataService).getAsBuffer(binary);
}
