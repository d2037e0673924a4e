import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { runItems } from '../shared/items';
import { readConcurrency } from '../shared/request-options';
import { imageGenProperties } from './description';
import { generateForItem } from './generate';

export class ImageGen implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ImageGen',
		name: 'imageGen',
		icon: { light: 'file:../../icons/imagegen.svg', dark: 'file:../../icons/imagegen.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ $parameter["model"] }}',
		description: 'Generate images with p-image, p-image-edit and textimage-v2',
		defaults: { name: 'ImageGen' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imageGenApi', required: true }],
		properties: imageGenProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await runItems(this, readConcurrency(this), async (itemIndex) => await generateForItem(this, itemIndex))];
	}
}
