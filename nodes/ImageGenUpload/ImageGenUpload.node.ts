import type { IExecuteFunctions, INodeExecutionData, INodeType, INodeTypeDescription } from 'n8n-workflow';
import { NodeConnectionTypes } from 'n8n-workflow';

import { runOperation } from '../shared/items';
import { readConcurrency } from '../shared/request-options';
import { onlyOnImageGen } from '../shared/service-type';
import { imageGenUploadProperties } from './description';
import { deleteForItem, getInfoForItem } from './manage';
import { uploadForItem } from './upload';
import { verifyForItem } from './verify';

// An OpenAI-compatible images API hosts and checks nothing: each operation says so instead of sending a request.
const FILES_API = 'upload API (POST /uploads) or hosted files (/files)';
const OPERATIONS = {
	upload: onlyOnImageGen(uploadForItem, 'Uploading a file', FILES_API),
	getInfo: onlyOnImageGen(getInfoForItem, 'Get Info', FILES_API),
	delete: onlyOnImageGen(deleteForItem, 'Delete', FILES_API),
	verify: onlyOnImageGen(verifyForItem, 'Verify', 'provenance check (POST /provenance/verify)'),
};

export class ImageGenUpload implements INodeType {
	description: INodeTypeDescription = {
		displayName: 'ImageGen Upload',
		name: 'imageGenUpload',
		icon: { light: 'file:../../icons/upload.svg', dark: 'file:../../icons/upload.dark.svg' },
		group: ['transform'],
		version: 1,
		subtitle: '={{ ($parameter["operation"] ?? "upload") === "upload" ? "from " + $parameter["inputType"] : $parameter["operation"] }}',
		description: 'Host an image or video at a public URL for up to 24 hours, get its details or delete it; check an image for generation marks',
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
