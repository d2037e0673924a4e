import {
	EXTENDED_ASPECT_RATIOS,
	MODELS,
	MODEL_IDS,
	describeCatalog,
	dimensionsFor,
	parameterNameFor,
	parseGenerationRequest,
	toGenerationBody,
} from '../../index';
import { STANDARD_ASPECT_RATIOS, nearestAspectRatio, narrowSpec, type AspectRatio } from '../../core/models';

describe('the catalog', () => {
	it('keeps every aspect ratio within 3 % and the long side within 1024–2048', () => {
		for (const ratio of EXTENDED_ASPECT_RATIOS) {
			const [w, h] = ratio.split(':').map(Number) as [number, number];
			const { width, height } = dimensionsFor(ratio);
			expect(Math.abs(width / height / (w / h) - 1)).toBeLessThan(0.03);
			expect(Math.max(width, height)).toBeGreaterThanOrEqual(1024);
			expect(Math.max(width, height)).toBeLessThanOrEqual(2048);
		}
	});

	it('prices images as the specification lists them', () => {
		expect(MODELS['p-image'].priceUsd).toBe(0.0035);
		expect(MODELS['p-image-edit'].priceUsd).toBe(0.007);
	});

	it('describes each model with its own fields, ratios and overridable price', () => {
		const catalog = describeCatalog({ 'textimage-v2': 0.05 });
		expect(catalog.data.map((model) => model.id)).toEqual([...MODEL_IDS]);
		const byId = Object.fromEntries(catalog.data.map((model) => [model.id, model]));
		expect(byId['p-image']!.aspect_ratios).toHaveLength(7);
		expect(byId['textimage-v2']!.aspect_ratios).toHaveLength(11);
		expect(byId['p-image-edit']!.fields).toContain('images');
		expect(byId['p-image']!.fields).not.toContain('negative_prompt');
		expect(byId['textimage-v2']!.pricing.per_image_usd).toBe(0.05);
		expect(byId['p-image']!.pricing.per_image_usd).toBe(0.0035);
	});
});

describe('the catalog ratio nearest to an image (match_input_image)', () => {
	test.each([
		[1920, 1080, STANDARD_ASPECT_RATIOS, '16:9'],
		[1080, 1920, STANDARD_ASPECT_RATIOS, '9:16'],
		[4032, 3024, STANDARD_ASPECT_RATIOS, '4:3'],
		[1000, 1000, STANDARD_ASPECT_RATIOS, '1:1'],
		// 1.6 sits between 3:2 (1.5) and 16:9 (1.78); in log terms it is nearer 3:2.
		[1600, 1000, STANDARD_ASPECT_RATIOS, '3:2'],
		[1600, 1000, EXTENDED_ASPECT_RATIOS, '16:10'],
		// A panorama far wider than any ratio takes the widest one.
		[6000, 1000, STANDARD_ASPECT_RATIOS, '16:9'],
		[6000, 1000, EXTENDED_ASPECT_RATIOS, '3:1'],
	] as const)('%d × %d among %p → %s', (width, height, ratios, expected) => {
		expect(nearestAspectRatio(width, height, ratios)).toBe(expected);
	});
});

describe('a host narrows a model, never widens it', () => {
	it('takes the smaller of each limit and the common aspect ratios', () => {
		const narrowed = narrowSpec(MODELS['textimage-v2'], { promptMaxLength: 500, maxInputImages: 3, aspectRatios: ['1:1', '3:1', '5:4' as AspectRatio] });
		expect(narrowed.promptMaxLength).toBe(500);
		expect(narrowed.maxInputImages).toBe(0);
		expect(narrowed.aspectRatios).toEqual(['1:1', '3:1']);
		expect(narrowSpec(MODELS['p-image-edit'], { maxInputImages: 50, promptMaxLength: 1e9 })).toEqual(MODELS['p-image-edit']);
		expect(narrowSpec(MODELS['p-image'])).toEqual(MODELS['p-image']);
	});

	it('describes the narrowed entry where one is given', () => {
		const catalog = describeCatalog({}, { 'p-image-edit': narrowSpec(MODELS['p-image-edit'], { maxInputImages: 5 }) });
		const byId = Object.fromEntries(catalog.data.map((model) => [model.id, model]));
		expect(byId['p-image-edit']!.limits).toMatchObject({ max_input_images: 5 });
		expect(describeCatalog().data.find((model) => model.id === 'p-image-edit')!.limits).toMatchObject({ max_input_images: 10 });
	});
});

describe('request shaping for the nodes', () => {
	it('sends only what the selected model accepts, so a node never trips strict validation', () => {
		const everything = {
			prompt: 'a lighthouse',
			images: ['https://example.com/a.png'],
			negativePrompt: 'people',
			styleType: 'ANIME',
			magicPromptOption: 'OFF',
			aspectRatio: '16:9',
			outputFormat: 'webp',
			responseFormat: 'b64_json',
		};
		expect(toGenerationBody({ model: 'p-image', ...everything })).toEqual({
			model: 'p-image',
			prompt: 'a lighthouse',
			aspect_ratio: '16:9',
			output_format: 'webp',
			response_format: 'b64_json',
		});
		for (const model of MODEL_IDS) {
			expect(() => parseGenerationRequest(toGenerationBody({ model, ...everything }))).not.toThrow();
		}
		expect(toGenerationBody({ model: 'textimage-v2', ...everything, negativePrompt: '' })).not.toHaveProperty('negative_prompt');
	});

	it('maps API fields back to parameter names', () => {
		expect(parameterNameFor('images[3]')).toBe('images');
		expect(parameterNameFor('negative_prompt')).toBe('negativePrompt');
		expect(parameterNameFor(null)).toBeUndefined();
	});
});
