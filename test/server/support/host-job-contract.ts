/**
 * What every provider of a host that names its jobs must do (generation/provider.ts), written
 * once and run against each (generation/host-job-contract.test.ts) with the host's loopback
 * stand-in: one create per generation, an unfinished job told to `hostJobStarted` once with the
 * provider's own name, images as bytes or URLs, an abort that ends the call promptly, `resume` that follows a
 * job made before without creating one, `cancel` that never throws.
 */
import type { GenerationContext, GenerationProvider, HostJobRef, SettledRequest } from '../../../server/src/generation/provider';
import type { ImageWork } from '../../../server/src/media/image-work';
import { makeImage } from './media';

export interface HostJobProviderUnderContract {
	provider: GenerationProvider;
	request: SettledRequest;
	/** How many jobs the host has been asked to create since the test began. */
	creates(): number;
	/** Jobs made from now on run until long after any test ends. */
	slowJobs(): void;
	/** A job made at the host before the test (by an earlier run of the service), still running. */
	jobMadeBefore(): Promise<HostJobRef>;
}

export function providerContext(extra: Partial<GenerationContext> = {}): GenerationContext {
	return {
		signal: AbortSignal.timeout(10_000),
		deadline: Date.now() + 10_000,
		loadInputImage: () => makeImage('png', 16, 16),
		// Hosts hand back bytes or URLs; only the sandbox draws.
		imageWork: undefined as unknown as ImageWork,
		...extra,
	};
}

/** `setup` readies the host's stand-in for each test so that a create answers a job still running. */
export function describeHostJobContract(name: string, setup: () => Promise<HostJobProviderUnderContract>): void {
	describe(`${name}: the host-job contract`, () => {
		let subject: HostJobProviderUnderContract;
		beforeEach(async () => {
			subject = await setup();
		});

		test('a generation creates one job, tells its id once under the provider’s name, and answers images as bytes or URLs', async () => {
			const told: HostJobRef[] = [];
			const images = await subject.provider.generate(subject.request, providerContext({ hostJobStarted: async (job) => void told.push(job) }));
			expect(subject.provider.hasJobIds).toBe(true);
			expect(subject.creates()).toBe(1);
			expect(told).toHaveLength(1);
			expect(told[0]!.provider).toBe(subject.provider.name);
			expect(told[0]!.id).toEqual(expect.any(String));
			expect(told[0]!.id.length).toBeGreaterThan(0);
			expect(images.length).toBeGreaterThan(0);
			for (const image of images) {
				if ('bytes' in image) expect(image.bytes.length).toBeGreaterThan(0);
				else expect(image.url).toMatch(/^https?:\/\//);
			}
		});

		test('an abort ends the generation within a second', async () => {
			subject.slowJobs();
			const controller = new AbortController();
			setTimeout(() => controller.abort(new Error('client left')), 200);
			const started = Date.now();
			await expect(subject.provider.generate(subject.request, providerContext({ signal: controller.signal }))).rejects.toBeDefined();
			expect(Date.now() - started).toBeLessThan(1_200);
		});

		test('resume follows a job made before to its images without creating one', async () => {
			const job = await subject.jobMadeBefore();
			const before = subject.creates();
			const images = await subject.provider.resume!(job, providerContext());
			expect(images.length).toBeGreaterThan(0);
			expect(subject.creates()).toBe(before);
		});

		test('cancel never throws: not for a running job, not for one the host does not know', async () => {
			subject.slowJobs();
			const job = await subject.jobMadeBefore();
			await expect(Promise.resolve(subject.provider.cancel?.(job))).resolves.toBeUndefined();
			await expect(Promise.resolve(subject.provider.cancel?.({ provider: subject.provider.name, id: 'never-made' }))).resolves.toBeUndefined();
		});
	});
}
