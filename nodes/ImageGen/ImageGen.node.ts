import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { runOperation } from '../shared/items';
import { readConcurrency } from '../shared/request-options';
import { onlyOnImageGen } from '../shared/service-type';
import { imageGenProperties } from './description';
import { generateForItem } from './generate';
import { getGenerationForItem } from './get-generation';

const OPERATIONS = { generate: generateForItem, getGeneration: onlyOnImageGen(getGenerationForItem, 'Get Generation', 'generations to fetch: its answer is the image itself') };

export class ImageGen implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ImageGen',
		name: 'imageGen',
		icon: { light: 'file:../../icons/imagegen.svg', dark: 'file:../../icons/imagegen.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ ($parameter["operation"] ?? "generate") === "generate" ? $parameter["model"] : "get generation" }}',
		description: 'Generate images with p-image, p-image-edit and textimage-v2, videos with p-video, or fetch a generation',
		defaults: { name: 'ImageGen' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imageGenApi', required: true }],
		properties: imageGenProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await runOperation(this, OPERATIONS, 'generate', readConcurrency(this))];
	}
}
