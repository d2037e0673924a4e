/**
 * The C2PA manifest a generated video carries (DESIGN.md "Video"): created by the model
 * (`c2pa.created`, IPTC trainedAlgorithmicMedia, the model as the software agent), as the images'
 * manifests say it. A first frame that came with its own manifest is kept as an ingredient with
 * the relationship C2PA gives an input of a generative model (`inputTo`): the video is not an
 * edit of that image (`parentOf`) nor made of it as a part (`componentOf`).
 */
import { TRAINED_ALGORITHMIC_MEDIA } from '../../../core/api';
import type { SigningJob } from './c2pa-engine';
import { mayCarryC2pa } from './provenance-scan';

export interface VideoManifestFacts {
	model: string;
	generationId: string;
	/** `imagegen-server <version>`. */
	creatorTool: string;
	/** The image the video starts from, when the caller gave one. */
	firstFrame?: { bytes: Buffer; mimeType: string };
}

export const VIDEO_MIME_TYPE = 'video/mp4';

const FIRST_FRAME_ID = 'first-frame';

/** The manifest definition and, for a first frame with its own manifest, that frame as an ingredient. */
export function videoManifest(facts: VideoManifestFacts): Pick<SigningJob, 'manifest' | 'ingredients'> {
	const firstFrame = facts.firstFrame && mayCarryC2pa(facts.firstFrame.bytes) ? facts.firstFrame : undefined;
	const created = {
		action: 'c2pa.created',
		digitalSourceType: TRAINED_ALGORITHMIC_MEDIA,
		softwareAgent: { name: facts.model },
		...(firstFrame ? { parameters: { ingredientIds: [FIRST_FRAME_ID] } } : {}),
	};
	const manifest = {
		claim_generator_info: [{ name: 'imagegen-server', version: facts.creatorTool.split(' ')[1] }],
		title: `${facts.generationId}.mp4`,
		format: VIDEO_MIME_TYPE,
		assertions: [{ label: 'c2pa.actions.v2', data: { actions: [created] } }],
	};
	if (!firstFrame) return { manifest };
	const extension = firstFrame.mimeType.split('/')[1] ?? 'image';
	const ingredient = { title: `first-frame.${extension}`, relationship: 'inputTo', label: FIRST_FRAME_ID };
	return { manifest, ingredients: [{ bytes: firstFrame.bytes, mimeType: firstFrame.mimeType, ingredient }] };
}
