/**
 * The CLI refuses a provider configuration it cannot serve before it listens: exit code 2 and a
 * message naming what is wrong (the provider suites run the service in process; this is the
 * command's own answer).
 */
import { spawnSync } from 'node:child_process';
import { PROVIDER_NAMES } from '../../../server/src/config/provider-selection';
import { SERVER_CLI } from '../../helpers/server';

describe('start-up checks the provider configuration', () => {
	test.each([
		['p-image=dalle', {}, new RegExp(`unknown provider 'dalle' for p-image \\(known: ${PROVIDER_NAMES.join(', ')}\\)`)],
		['p-imagex=replicate', {}, /unknown model 'p-imagex'/],
		['p-image=replicate', {}, /p-image=replicate needs REPLICATE_API_TOKEN/],
		['p-image=pruna', {}, /p-image=pruna needs PRUNA_API_KEY/],
		['textimage-v2=pruna', { PRUNA_API_KEY: 'k' }, /pruna serves p-image and p-image-edit only/],
		['p-image=ideogram', { IDEOGRAM_API_KEY: 'k' }, /ideogram serves textimage-v2 only/],
		['p-image=upstream', { UPSTREAM_API_KEY: 'k' }, /needs UPSTREAM_BASE_URL/],
		['p-image=replicate', { REPLICATE_API_TOKEN: 't', REPLICATE_BASE_URL: 'not a url' }, /--replicate-base-url \(REPLICATE_BASE_URL\) must be an http\(s\) URL; got 'not a url'/],
		['p-image=openai', {}, /p-image=openai needs OPENAI_API_KEY/],
		['p-image=openai', { OPENAI_API_KEY: 'k', OPENAI_IMAGE_SIZES: '1024' }, /--openai-image-sizes \(OPENAI_IMAGE_SIZES\): '1024' is not WIDTHxHEIGHT/],
		['p-image=automatic1111', {}, /p-image=automatic1111 needs A1111_BASE_URL/],
		['p-image=comfyui', {}, /p-image=comfyui needs COMFYUI_BASE_URL/],
		['p-image=pruna', { PRUNA_API_KEY: 'k', PRUNA_BASE_URL: 'api.pruna.ai/v1' }, /--pruna-base-url \(PRUNA_BASE_URL\) must be an http\(s\) URL/],
		['p-image=comfyui', { COMFYUI_BASE_URL: 'http://127.0.0.1:8188' }, /p-image=comfyui needs a workflow file: --comfyui-workflow p-image=<file\.json>/],
		['p-image=comfyui', { COMFYUI_BASE_URL: 'http://127.0.0.1:8188', IMAGEGEN_COMFYUI_WORKFLOW: 'p-image=/nonexistent/flux.json' }, /comfyui workflow \/nonexistent\/flux\.json: cannot be read \(no such file\)/],
	])('--providers %s with %j fails with exit 2', (providers, env, message) => {
		const clean = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(REPLICATE|PRUNA|IDEOGRAM|UPSTREAM|OPENAI|A1111|COMFYUI|IMAGEGEN)_/.test(key)));
		const result = spawnSync(process.execPath, [SERVER_CLI, '--providers', providers, '--port', '0'], { encoding: 'utf8', env: { ...clean, ...env }, timeout: 10_000 });
		expect(result.status).toBe(2);
		expect(result.stderr).toMatch(message);
	});
});
