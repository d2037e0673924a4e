/**
 * What a user sees in the editor with a video model, evaluated with n8n's own display logic
 * (NodeHelpers): p-video shows its own parameters (from core's video catalog) and none of the
 * image ones; the image models show none of p-video's.
 */
import { NodeHelpers, type INodeParameters, type INodeProperties } from 'n8n-workflow';

import { MODEL_IDS } from '../../core/models';
import { VIDEO_MODELS, describeVideoModel } from '../../core/video-models';
import { ImageGen } from '../../nodes/ImageGen/ImageGen.node';
import { videoProperties } from '../../nodes/ImageGen/video-description';

const imageGen = new ImageGen().description;
const node = { typeVersion: 1 };

function visible(values: Record<string, unknown>): INodeProperties[] {
	const resolved = NodeHelpers.getNodeParameters(imageGen.properties, values as never, true, false, node, imageGen) ?? {};
	return imageGen.properties.filter((property) => NodeHelpers.displayParameter(resolved, property, node, imageGen));
}

const names = (properties: INodeProperties[]) => properties.map((property) => property.name);
const optionValues = (property: INodeProperties | undefined) => (property?.options ?? []).map((option) => (option as { value: unknown }).value);
const VIDEO_ONLY = [...new Set(names(videoProperties))].filter((name) => name !== 'aspectRatio');

describe('p-video', () => {
	test('shows exactly its own parameters: no output format, response format or input images', () => {
		expect(names(visible({ model: 'p-video' }))).toEqual([
			'operation',
			'model',
			'prompt',
			'duration',
			'resolution',
			'fps',
			'aspectRatio',
			'draft',
			'firstFrame',
			'lastFrame',
			'audioUrl',
			'promptUpsampling',
			'saveAudio',
			'options',
		]);
	});

	test.each([
		[{ firstFrame: 'binary' }, ['firstFrame', 'firstFrameBinaryPropertyName', 'lastFrame']],
		[{ firstFrame: 'url', lastFrame: 'binary' }, ['firstFrame', 'firstFrameUrl', 'lastFrame', 'lastFrameBinaryPropertyName']],
		[{ lastFrame: 'url' }, ['firstFrame', 'lastFrame', 'lastFrameUrl']],
	])('frames %j show the field of their source: %j', (frames, expected) => {
		expect(names(visible({ model: 'p-video', ...frames })).filter((name) => /Frame/.test(name))).toEqual(expected);
	});

	test('option lists and defaults are the catalog\'s and the service\'s', () => {
		const spec = VIDEO_MODELS['p-video'];
		const defaults = describeVideoModel(spec).defaults;
		const shown = visible({ model: 'p-video' });
		const byName = (name: string) => shown.find((property) => property.name === name)!;
		expect(optionValues(byName('aspectRatio'))).toEqual([...spec.aspectRatios]);
		expect(optionValues(byName('resolution'))).toEqual([...spec.resolutions]);
		expect(optionValues(byName('fps'))).toEqual([...spec.fps]);
		expect(byName('duration').typeOptions).toMatchObject({ minValue: spec.minSeconds, maxValue: spec.maxSeconds });
		expect({
			seconds: byName('duration').default,
			aspect_ratio: byName('aspectRatio').default,
			resolution: byName('resolution').default,
			fps: byName('fps').default,
			draft: byName('draft').default,
			prompt_upsampling: byName('promptUpsampling').default,
			save_audio: byName('saveAudio').default,
		}).toEqual(defaults);
		expect(byName('aspectRatio').description).toMatch(/ignored with a First Frame/);
	});

	test('the options: no OpenAI model id; waiting, the webhook, the seed and the download apply', () => {
		const collection = imageGen.properties.find((property) => property.name === 'options')!;
		const shownOptions = (options: INodeParameters) => {
			const root = NodeHelpers.getNodeParameters(imageGen.properties, { model: 'p-video', options } as never, true, false, node as never, imageGen) ?? {};
			return names((collection.options as INodeProperties[]).filter((option) => NodeHelpers.displayParameter(options, option, node, imageGen, root)));
		};
		expect(shownOptions({})).toEqual(['download', 'binaryPropertyName', 'inlineLimitMb', 'seed', 'waitForResult', 'maxWaitSeconds', 'webhookUrl', 'concurrency', 'maxRetries', 'timeout']);
		expect(shownOptions({ waitForResult: 'submit' })).not.toContain('maxWaitSeconds');
	});
});

test.each(MODEL_IDS)('%s shows none of the video parameters', (model) => {
	const shown = names(visible({ model, firstFrame: 'binary', lastFrame: 'url' }));
	for (const name of VIDEO_ONLY) expect(shown).not.toContain(name);
	expect(shown).toEqual(expect.arrayContaining(['outputFormat', 'responseFormat']));
});

test('get generation shows no video parameters either', () => {
	expect(names(visible({ operation: 'getGeneration', model: 'p-video' }))).toEqual(['operation', 'generationId', 'options']);
});
