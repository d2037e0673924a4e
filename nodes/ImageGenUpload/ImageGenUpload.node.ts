import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { runItems } from '../shared/items';
import { readConcurrency } from '../shared/request-options';
import { imageGenUploadProperties } from './description';
import { uploadForItem } from './upload';

export class ImageGenUpload implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ImageGen Upload',
		name: 'imageGenUpload',
		icon: { light: 'file:../../icons/upload.svg', dark: 'file:../../icons/upload.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ "from " + $parameter["inputType"] }}',
		description: 'Host an image or video at a public URL for 24 hours',
		defaults: { name: 'ImageGen Upload' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imageGenApi', required: true }],
		properties: imageGenUploadProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await runItems(this, readConcurrency(this), async (itemIndex) => await uploadForItem(this, itemIndex))];
	}
}
