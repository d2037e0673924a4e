/**
 * Whether the node runs as an AI Agent's tool. n8n then runs it under its type name plus `Tool`
 * (e.g. `n8n-nodes-imagegen.imageGenTool`); contexts that supply a tool also say so through
 * `isToolExecution()`. An agent passes only the items' JSON to its model and drops binary data,
 * so in this mode the nodes answer compact JSON and fetch no bytes for nobody.
 */
import type { IExecuteFunctions } from 'n8n-workflow';

export function runsAsTool(context: IExecuteFunctions): boolean {
	if (context.getNode().type.endsWith('Tool')) return true;
	const probe = (context as { isToolExecution?: () => boolean }).isToolExecution;
	return typeof probe === 'function' && probe.call(context) === true;
}
