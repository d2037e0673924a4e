/**
 * The credential's Service Type: an ImageGen service (the default, and what credentials saved
 * before the option exist were made for) or a plain OpenAI-compatible images API, which has only
 * `/images/generations` and `/images/edits`: no uploads, no jobs, none of our own fields.
 */
import type { IExecuteFunctions, INodeExecutionData } from 'n8n-workflow';
import { NodeOperationError } from 'n8n-workflow';

import { CREDENTIAL_TYPE } from './transport';

type ServiceType = 'imagegen' | 'openai';

export async function serviceTypeOf(context: IExecuteFunctions, itemIndex: number): Promise<ServiceType> {
	const credentials = await context.getCredentials<{ serviceType?: string }>(CREDENTIAL_TYPE, itemIndex);
	return credentials.serviceType === 'openai' ? 'openai' : 'imagegen';
}

/** The failure of an operation an OpenAI-compatible API has no endpoint for (`lacking`: what it lacks), before anything is sent. */
function notOnOpenAi(context: IExecuteFunctions, itemIndex: number, operation: string, lacking: string): NodeOperationError {
	return new NodeOperationError(context.getNode(), `${operation} needs an ImageGen service: an OpenAI-compatible images API has no ${lacking}`, {
		itemIndex,
		description:
			"The ImageGen API credential's Service Type is OpenAI-Compatible, whose API offers only image generations and edits. Use a credential whose Service Type is ImageGen (an imagegen-server) for this operation.",
	});
}

type ItemOperation = (context: IExecuteFunctions, itemIndex: number) => Promise<INodeExecutionData[]>;

/** `operation`, refused per item (so Continue On Fail applies) when the credential is OpenAI-Compatible. */
export function onlyOnImageGen(operation: ItemOperation, name: string, lacking: string): ItemOperation {
	return async (context, itemIndex) => {
		if ((await serviceTypeOf(context, itemIndex)) === 'openai') throw notOnOpenAi(context, itemIndex, name, lacking);
		return await operation(context, itemIndex);
	};
}
