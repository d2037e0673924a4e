import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { runOperation } from '../shared/items';
import { readConcurrency } from '../shared/request-options';
import { imageGenUploadProperties } from './description';
import { deleteForItem, getInfoForItem } from './manage';
import { uploadForItem } from './upload';

const OPERATIONS = { upload: uploadForItem, getInfo: getInfoForItem, delete: deleteForItem };

export class ImageGenUpload implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ImageGen Upload',
		name: 'imageGenUpload',
		icon: { light: 'file:../../icons/upload.svg', dark: 'file:../../icons/upload.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ ($parameter["operation"] ?? "upload") === "upload" ? "from " + $parameter["inputType"] : $parameter["operation"] }}',
		description: 'Host an image or video at a public URL for up to 24 hours, get its details or delete it',
		defaults: { name: 'ImageGen Upload' },
		usableAsTool: true,
		inputs: [NodeConnectionTypes.Main],
		outputs: [NodeConnectionTypes.Main],
		credentials: [{ name: 'imageGenApi', required: true }],
		properties: imageGenUploadProperties,
	};

	async execute(this: IExecuteFunctions): Promise<INodeExecutionData[][]> {
		return [await runOperation(this, OPERATIONS, 'upload', readConcurrency(this))];
	}
}
