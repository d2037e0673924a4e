/**
 * An edit's input images as OpenAI-compatible hosts take them: OpenAI's "Create image edit" takes
 * PNG, WebP and JPEG files only, and LocalAI hands its `file` to backends that read those for
 * certain; a GIF (its first frame) or an AVIF is converted to PNG first, on the service's image
 * queue like every sharp pipeline.
 */
import { OPENAI_EDIT_INPUT_TYPES } from '../../../../core/openai-images';
import { sniffMedia } from '../../../../core/media';
import type { ImageTask } from '../../media/image-work';
import sharp from '../../media/sharp';
import type { GenerationContext, SettledRequest } from '../provider';
import { loadInputImages } from './inputs';

export async function openAiInputImages(request: SettledRequest, context: GenerationContext): Promise<Buffer[]> {
	const images = await loadInputImages(request, context);
	return await Promise.all(
		images.map(async (bytes) => (OPENAI_EDIT_INPUT_TYPES.includes(sniffMedia(bytes)?.mimeType ?? '') ? bytes : await context.imageWork.run((task) => asPng(bytes, task), { signal: context.signal }))),
	);
}

async function asPng(bytes: Buffer, task: ImageTask): Promise<Buffer> {
	return await sharp(bytes, { limitInputPixels: task.limitInputPixels }).timeout({ seconds: task.timeoutSeconds() }).png().toBuffer();
}
