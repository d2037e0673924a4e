/**
 * Runs a node's per-item work concurrently with output in input order, a `pairedItem` on every
 * output item, and n8n's "continue on fail" turning an item's failure into an error item.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeApiError, NodeOperationError } from 'n8n-workflow';

import { ImageGenError } from '../../core/errors';
import { parameterNameFor } from '../../core/request';
import { mapInOrder } from './concurrency';

async function runItems(
	context: IExecuteFunctions,
	concurrency: number,
	handleItem: (itemIndex: number) => Promise<INodeExecutionData[]>,
): Promise<INodeExecutionData[]> {
	const items = context.getInputData();
	const outputs = await mapInOrder(items, concurrency, async (_item, itemIndex) => {
		const pairedItem = { item: itemIndex };
		try {
			const results = await handleItem(itemIndex);
			return results.map((result) => ({ ...result, pairedItem }));
		} catch (error) {
			const nodeError = toNodeError(context, error, itemIndex);
			if (context.continueOnFail()) {
				return [{ json: { error: nodeError.message, ...(nodeError.description ? { description: nodeError.description } : {}) }, pairedItem }];
			}
			throw nodeError;
		}
	});
	return outputs.flat();
}

/**
 * Runs the node's `operation` over every item. Workflows saved before a node had operations have
 * no `operation`: they run `fallback`, the operation the node always performed.
 */
export async function runOperation(
	context: IExecuteFunctions,
	operations: Readonly<Record<string, (context: IExecuteFunctions, itemIndex: number) => Promise<INodeExecutionData[]>>>,
	fallback: string,
	concurrency: number,
): Promise<INodeExecutionData[]> {
	const operation = context.getNodeParameter('operation', 0, fallback) as string;
	const handleItem = Object.hasOwn(operations, operation) ? operations[operation] : undefined;
	if (!handleItem) {
		throw new NodeOperationError(context.getNode(), `Parameter 'operation': unknown operation ${JSON.stringify(operation)}; use one of ${Object.keys(operations).join(', ')}`);
	}
	return await runItems(context, concurrency, async (itemIndex) => await handleItem(context, itemIndex));
}

/** Runs a core validation step; its ImageGenError becomes a NodeOperationError naming the parameter. */
export function validated<T>(
	context: IExecuteFunctions,
	itemIndex: number,
	validate: () => T,
	parameterName?: string,
): T {
	try {
		return validate();
	} catch (error) {
		if (error instanceof ImageGenError) throw invalidParameter(context, error, itemIndex, parameterName);
		throw toNodeError(context, error, itemIndex);
	}
}

/** A failure of core validation, worded around the node parameter the user can see and fix. */
function invalidParameter(
	context: IExecuteFunctions,
	error: ImageGenError,
	itemIndex: number,
	parameterName: string | undefined = parameterNameFor(error.param) ?? error.param ?? undefined,
): NodeOperationError {
	const subject = parameterName ? `Parameter '${parameterName}'` : 'Parameters';
	return new NodeOperationError(context.getNode(), `${subject} of item ${itemIndex}: ${error.message}`, {
		itemIndex,
		description: 'The request was not sent: fix the parameter and run the node again.',
	});
}

/** Any failure as the n8n error type that carries the item; n8n's own errors pass unchanged. */
export function toNodeError(context: IExecuteFunctions, error: unknown, itemIndex: number): NodeApiError | NodeOperationError {
	if (error instanceof NodeApiError || error instanceof NodeOperationError) return error;
	if (error instanceof ImageGenError) return invalidParameter(context, error, itemIndex);
	return new NodeOperationError(context.getNode(), error as Error, { itemIndex });
}
