/**
 * Every provider that calls a host passes the provider contract (support/provider-contract.ts),
 * each against its loopback stand-in.
 */
import type { ModelId } from '../../../core/models';
import { join } from 'node:path';
import { startFakeComfyUI } from '../support/fake-comfyui';
import { startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { startA1111Host, startOpenAiHost, type ImageApiHost } from '../support/image-api-hosts';
import { makeImage } from '../support/media';
import { providersFor as tableFor } from '../support/providers';
import { describeProviderContract, type ProviderUnderContract } from '../support/provider-contract';

const closers: Array<() => Promise<void>> = [];
afterAll(async () => await Promise.all(closers.map((close) => close())));

/** Providers built as the service builds them, one table per selection. */
function providersFor(name: string, models: readonly ModelId[], env: NodeJS.ProcessEnv) {
	const table = tableFor(models.map((model) => `${model}=${name}`).join(','), env);
	return (model: ModelId) => table[model];
}

async function imageApi(start: () => Promise<ImageApiHost>, name: string, models: readonly ModelId[], env: (origin: string) => NodeJS.ProcessEnv): Promise<ProviderUnderContract> {
	const host = await start();
	host.image = await makeImage('png', 256, 256);
	closers.push(() => host.close());
	return {
		provider: providersFor(name, models, env(host.origin)),
		failNext: () => host.next({ status: 500, body: { error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } } }),
		slow: (ms) => (host.drawMs = ms),
	};
}

async function fakeHosts(name: string, models: readonly ModelId[], create: string, env: (origin: string) => NodeJS.ProcessEnv): Promise<ProviderUnderContract> {
	const fake: FakeHosts = await startFakeHosts();
	fake.setImage(await makeImage('png', 256, 256));
	closers.push(() => fake.close());
	return {
		provider: providersFor(name, models, env(fake.origin)),
		failNext: () => fake.script('POST', create, { status: 500, body: { detail: 'Internal server error' } }),
		slow: (ms) => (ms > 0 ? fake.script('POST', create, { status: 0, hang: true }) : fake.reset()),
	};
}

const EVERY_MODEL: readonly ModelId[] = ['p-image', 'p-image-edit', 'textimage-v2'];

describeProviderContract('openai', EVERY_MODEL, () => imageApi(startOpenAiHost, 'openai', EVERY_MODEL, (origin) => ({ OPENAI_BASE_URL: `${origin}/v1` })));
describeProviderContract('automatic1111', EVERY_MODEL, () => imageApi(startA1111Host, 'automatic1111', EVERY_MODEL, (origin) => ({ A1111_BASE_URL: origin })));
describeProviderContract('replicate', EVERY_MODEL, () => fakeHosts('replicate', EVERY_MODEL, '/v1/models/', (origin) => ({ REPLICATE_API_TOKEN: 'r8_test', REPLICATE_BASE_URL: `${origin}/v1` })));
const PRUNA_MODELS: readonly ModelId[] = ['p-image', 'p-image-edit'];
describeProviderContract('pruna', PRUNA_MODELS, () => fakeHosts('pruna', PRUNA_MODELS, '/v1/predictions', (origin) => ({ PRUNA_API_KEY: 'pruna-key', PRUNA_BASE_URL: `${origin}/v1` })));
describeProviderContract('ideogram', ['textimage-v2'], () => fakeHosts('ideogram', ['textimage-v2'], '/generate', (origin) => ({ IDEOGRAM_API_KEY: 'ideogram-key', IDEOGRAM_BASE_URL: origin })));

/** ComfyUI with the shipped SDXL workflows: p-image from sdxl.json, p-image-edit from sdxl-edit.json. */
async function comfyui(models: readonly ModelId[]): Promise<ProviderUnderContract> {
	const comfy = await startFakeComfyUI();
	comfy.setImage(await makeImage('png', 256, 256));
	closers.push(() => comfy.close());
	const examples = join(__dirname, '..', '..', '..', 'examples', 'comfyui');
	const workflows = ['--comfyui-workflow', `p-image=${join(examples, 'sdxl.json')},p-image-edit=${join(examples, 'sdxl-edit.json')}`];
	const table = tableFor(models.map((model) => `${model}=comfyui`).join(','), { COMFYUI_BASE_URL: comfy.origin }, undefined, workflows);
	return {
		provider: (model) => table[model],
		failNext: () => comfy.script('POST', '/prompt', { status: 500, body: { error: 'Internal server error' } }),
		slow: (ms) => comfy.setRunMs(ms),
	};
}
const COMFY_MODELS: readonly ModelId[] = ['p-image', 'p-image-edit'];
describeProviderContract('comfyui', COMFY_MODELS, () => comfyui(COMFY_MODELS));
