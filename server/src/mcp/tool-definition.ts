/** What every MCP tool is: its description for the client, and what it runs as the calling API key. */
import { invalidField } from '../../../core/errors';
import type { ApiKeyPolicy } from '../keys/authenticate';
import type { JsonSchema } from '../schema-docs/json-schema';

export interface ToolCaller {
	apiKeyId: string;
	apiKey: ApiKeyPolicy;
	/** Aborted when the MCP client goes away. */
	clientGone: AbortSignal;
}

export interface ToolDefinition {
	name: string;
	title: string;
	description: string;
	inputSchema: JsonSchema;
	annotations: { readOnlyHint?: boolean; destructiveHint?: boolean; idempotentHint?: boolean; openWorldHint?: boolean };
	run(args: Record<string, unknown>, caller: ToolCaller): Promise<Record<string, unknown>>;
}

/** The one argument of a tool on one thing (a file, a generation): its id, and nothing else. */
export function idArgument(args: Record<string, unknown>, what = 'the file id'): string {
	for (const key of Object.keys(args)) {
		if (key !== 'id') throw invalidField(key, `Unknown argument '${key}': give only 'id'`, 'unknown_field');
	}
	if (typeof args.id !== 'string' || args.id.length === 0) throw invalidField('id', `'id' is required: ${what}, a string`, 'missing_field');
	return args.id;
}
