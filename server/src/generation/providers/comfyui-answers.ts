/**
 * How ComfyUI's answers are read (server.py, execution.py): a prompt's history entry (its image
 * outputs, or why it failed), `GET /queue`'s lists, and `POST /prompt`'s 400 naming the nodes it
 * refused.
 */
import { boundedHostText } from './host-text';
import { hostMessage } from './provider-http';
import type { ComfyWorkflow } from './comfyui-workflow';

interface ImageRef {
	filename?: unknown;
	subfolder?: unknown;
	type?: unknown;
}

export interface HistoryEntry {
	outputs?: Record<string, { images?: ImageRef[] } | undefined>;
	status?: { status_str?: string; completed?: boolean; messages?: Array<[string, Record<string, unknown>]> };
}

export interface QueueState {
	queue_running?: unknown[][];
	queue_pending?: unknown[][];
}

/** The first image of the workflow's output nodes, in the file's order; else any image the history lists. */
export function firstImage(entry: HistoryEntry, workflow: ComfyWorkflow): { filename: string; subfolder: string; type: string } | undefined {
	const outputs = entry.outputs ?? {};
	const ids = [...workflow.outputNodes, ...Object.keys(outputs).filter((id) => !workflow.outputNodes.includes(id))];
	for (const id of ids) {
		const image = outputs[id]?.images?.find((each) => typeof each?.filename === 'string' && each.filename);
		if (image) return { filename: image.filename as string, subfolder: typeof image.subfolder === 'string' ? image.subfolder : '', type: typeof image.type === 'string' ? image.type : 'output' };
	}
	return undefined;
}

/** Why a prompt ended in error, in ComfyUI's words: its `execution_error` (node, exception) or its interruption. */
export function executionFailure(entry: HistoryEntry): string {
	const messages = Array.isArray(entry.status?.messages) ? entry.status.messages : [];
	const event = (name: string) => messages.find((message) => Array.isArray(message) && message[0] === name)?.[1];
	const failed = event('execution_error');
	if (failed) {
		const node = failed.node_id === undefined ? '' : ` at node ${String(failed.node_id)}${typeof failed.node_type === 'string' ? ` (${failed.node_type})` : ''}`;
		const kind = typeof failed.exception_type === 'string' && failed.exception_type ? `${failed.exception_type}: ` : '';
		return `${kind}${boundedHostText(String(failed.exception_message ?? 'execution error'))}${node}`;
	}
	if (event('execution_interrupted')) return 'the prompt was interrupted';
	return 'the prompt ended in error';
}

/**
 * `/prompt`'s 400: `error.message` is only "Prompt outputs failed validation"; what failed is in
 * `node_errors`, which is named here (node id, class, each error's message and details).
 */
export function promptRefusal(text: string): string | undefined {
	let body: { error?: { message?: unknown; details?: unknown } | string; node_errors?: Record<string, { class_type?: unknown; errors?: Array<{ message?: unknown; details?: unknown }> }> };
	try {
		body = JSON.parse(text);
	} catch {
		return undefined;
	}
	if (typeof body !== 'object' || body === null) return undefined;
	const nodes = Object.entries(body.node_errors && typeof body.node_errors === 'object' ? body.node_errors : {}).map(([id, node]) => {
		const errors = (Array.isArray(node?.errors) ? node.errors : []).map((each) => [each?.message, each?.details].filter((part) => typeof part === 'string' && part).join(': '));
		return `node ${id}${typeof node?.class_type === 'string' ? ` (${node.class_type})` : ''}: ${errors.join('; ') || 'invalid'}`;
	});
	const error = body.error;
	const head = typeof error === 'string' ? error : [error?.message, nodes.length === 0 ? error?.details : undefined].filter((part) => typeof part === 'string' && part).join(': ');
	const message = [head || hostMessage(text), ...nodes].filter(Boolean).join('; ');
	return message || undefined;
}

/** Where `GET /queue` has a prompt: running, waiting, or neither (its entries are `[number, prompt_id, …]`). */
export function queuePlace(queue: QueueState, id: string): 'running' | 'pending' | undefined {
	const has = (list: unknown) => Array.isArray(list) && list.some((item) => Array.isArray(item) && item[1] === id);
	return has(queue.queue_running) ? 'running' : has(queue.queue_pending) ? 'pending' : undefined;
}
