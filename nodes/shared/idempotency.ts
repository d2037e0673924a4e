/**
 * The `Idempotency-Key` of a request: the same for every attempt at one item of one node run in
 * one execution — the node's own retries and n8n's "Retry On Fail" alike — and different for every
 * other item, node, run (a node inside a loop runs once per round) and execution, so the service
 * answers a repeat with the first answer and charges once. Hashed: the parts may hold any
 * characters, the header takes visible ASCII only.
 */
import { createHash, randomUUID } from 'crypto';
import type { IExecuteFunctions } from 'n8n-workflow';

// A run without an execution id (never in n8n itself) still needs one key per node run.
const runIds = new WeakMap<IExecuteFunctions, string>();

export function idempotencyKey(context: IExecuteFunctions, itemIndex: number, purpose: string): string {
	let execution = context.getExecutionId();
	if (!execution) {
		execution = runIds.get(context) ?? `run-${randomUUID()}`;
		runIds.set(context, execution);
	}
	const node = context.getNode();
	const runIndex = Number(context.getWorkflowDataProxy(itemIndex).$runIndex ?? 0);
	const parts = JSON.stringify(['imagegen', execution, node.id, node.name, runIndex, itemIndex, purpose]);
	return createHash('sha256').update(parts).digest('hex');
}
