/**
 * `--providers` and `--prices` for p-video: the hosts that make video are accepted (alone or as a
 * fallback chain), any other is refused at start naming p-video and what serves it, and a price
 * is per second. Settings only image hosts have refuse p-video.
 */
import { ConfigError, parseConfig, type ServiceConfig } from '../../../server/src/config';
import { VIDEO_PROVIDER_NAMES, parseModelEntries } from '../../../server/src/config/provider-selection';

const parsed = (argv: string[], env: NodeJS.ProcessEnv = {}) => parseConfig(argv, env) as ServiceConfig;

test.each(['pruna', 'replicate', 'upstream', 'sandbox', 'pruna|replicate', 'replicate|upstream|pruna'])('p-video=%s is accepted', (chain) => {
	const env = { PRUNA_API_KEY: 'pk', REPLICATE_API_TOKEN: 'rt', UPSTREAM_BASE_URL: 'https://videos.example/v1', UPSTREAM_API_KEY: 'uk' };
	expect(parsed(['--providers', `p-image=ideogram,p-video=${chain}`], env).providerSelection).toEqual({ 'p-image': 'ideogram', 'p-video': chain });
});

test.each(['ideogram', 'openai', 'automatic1111', 'comfyui', 'pruna|openai'])('p-video=%s is refused at start, naming p-video and its hosts', (chain) => {
	const refusal = () => parseConfig(['--providers', `p-video=${chain}`], {});
	expect(refusal).toThrow(ConfigError);
	const bad = chain.split('|').find((name) => !(VIDEO_PROVIDER_NAMES as readonly string[]).includes(name))!;
	expect(refusal).toThrow(`--providers: ${bad} makes no video: p-video is served by sandbox, upstream, replicate, pruna`);
});

test('a provider listed twice in a p-video chain, or an unknown one, is refused', () => {
	expect(() => parseConfig(['--providers', 'p-video=pruna|pruna'], {})).toThrow("p-video lists a provider twice in 'pruna|pruna'");
	expect(() => parseConfig(['--providers', 'p-video=runway'], {})).toThrow("unknown provider 'runway' for p-video");
});

test("--prices takes p-video's price per second beside the images' per image", () => {
	expect(parsed(['--prices', 'p-image=0.004,p-video=0.03']).priceOverrides).toEqual({ 'p-image': 0.004, 'p-video': 0.03 });
	expect(() => parseConfig(['--prices', 'p-video=free'], {})).toThrow("--prices: the price of 'p-video' must be a non-negative number");
});

test('settings only image hosts have refuse p-video, naming the models that take them', () => {
	expect(() => parseConfig(['--comfyui-workflow', 'p-video=./video.json'], {})).toThrow(/--comfyui-workflow: p-video takes no <workflow file> \(models that do: p-image, p-image-edit, textimage-v2\)/);
	const version = `owner/name:${'a'.repeat(64)}`;
	expect(() => parseConfig(['--providers', 'p-video=replicate', '--replicate-model-versions', `p-video=${version}`], { REPLICATE_API_TOKEN: 'rt' })).toThrow(/--replicate-model-versions: p-video takes no owner\/name:version/);
});

test('parseModelEntries reads any catalog model unless told fewer', () => {
	expect(parseModelEntries('p-video=a, p-image=b', '<x>', (value) => value)).toEqual({ 'p-video': 'a', 'p-image': 'b' });
	expect(() => parseModelEntries('dall-e=a', '<x>', (value) => value)).toThrow("unknown model 'dall-e' (known: p-image, p-image-edit, textimage-v2, p-video)");
	expect(() => parseModelEntries('p-video=a', '<x>', (value) => value, ['p-image'])).toThrow('p-video takes no <x> (models that do: p-image)');
});
