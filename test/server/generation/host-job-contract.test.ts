/**
 * The host-job contract (support/host-job-contract.ts) for every provider whose host names its
 * jobs, each against its host's loopback stand-in.
 */
import { join, resolve } from 'node:path';
import { parseGenerationRequest } from '../../../core/schemas';
import type { ServiceConfig } from '../../../server/src/config';
import type { SettledRequest } from '../../../server/src/generation/provider';
import { comfyuiProvider } from '../../../server/src/generation/providers/comfyui';
import { bindComfyWorkflow, loadComfyWorkflow } from '../../../server/src/generation/providers/comfyui-workflow';
import { prunaProvider } from '../../../server/src/generation/providers/pruna';
import { replicateProvider } from '../../../server/src/generation/providers/replicate';
import { startFakeComfyUI, type FakeComfyUI } from '../support/fake-comfyui';
import { createPredictionAt, fakeHostsEnv, startFakeHosts, type FakeHosts } from '../support/fake-hosts';
import { makeImage } from '../support/media';
import { FAST_HOSTS, providerConfig } from '../support/providers';
import { describeHostJobContract } from '../support/host-job-contract';

const SDXL = join(resolve(__dirname, '../../../examples/comfyui'), 'sdxl.json');
const request: SettledRequest = { ...parseGenerationRequest({ model: 'p-image', prompt: 'A lighthouse', aspect_ratio: '16:9', seed: 1 }), aspect_ratio: '16:9' };

let hosts: FakeHosts;
let comfy: FakeComfyUI;
let settings: ServiceConfig['providerSettings'];

beforeAll(async () => {
	[hosts, comfy] = await Promise.all([startFakeHosts(), startFakeComfyUI()]);
	settings = providerConfig('p-image=pruna|replicate|comfyui', { ...fakeHostsEnv(hosts.origin), COMFYUI_BASE_URL: comfy.origin }).providerSettings;
});

afterAll(async () => {
	await Promise.all([hosts?.close(), comfy?.close()]);
});

// Replicate's and Pruna's stand-in: predictions answer "processing" once, so the create answers an
// unfinished job with its id; one made before the test finishes after two polls.
const PROVIDERS = [
	['replicate', (model: 'p-image') => replicateProvider(model, settings.replicate, FAST_HOSTS)],
	['pruna', (model: 'p-image') => prunaProvider(model, settings.pruna, FAST_HOSTS)],
] as const;
for (const [name, providerOf] of PROVIDERS) {
	describeHostJobContract(name, async () => {
		hosts.reset();
		hosts.setImage(await makeImage('png', 32, 32));
		hosts.setPendingPolls(1);
		return {
			provider: providerOf('p-image'),
			request,
			creates: () => hosts.predictionsMade().length,
			slowJobs: () => hosts.setPredictionMs(60_000),
			jobMadeBefore: async () => {
				hosts.setPendingPolls(2);
				return { provider: name, id: await createPredictionAt(hosts.origin, name) };
			},
		};
	});
}

describeHostJobContract('comfyui', async () => {
	comfy.reset();
	comfy.setImage(await makeImage('png', 32, 32));
	const before = () => comfy.callsTo('POST', '/prompt').length;
	const workflow = loadComfyWorkflow(SDXL);
	return {
		provider: comfyuiProvider('p-image', settings.comfyui, SDXL, FAST_HOSTS),
		request,
		creates: before,
		slowJobs: () => comfy.setRunMs(60_000),
		jobMadeBefore: async () => ({ provider: 'comfyui', id: await comfy.queueDirectly(bindComfyWorkflow(workflow, { prompt: 'x', negative_prompt: '', seed: 1, width: 1024, height: 1024, images: [] })) }),
	};
});
