/**
 * Keeps V8's young generation from holding memory the service does not need. Two moments fill it
 * with short-lived objects at a rate nothing else reaches:
 *
 * - Start-up (loading the AWS SDK, migrations, reading history). V8 answers that rate by growing the
 *   young generation from 1 to 16 MiB per half, and never gives it back under Node 20 however idle
 *   the service is later: ≈ 20 MB of resident memory for the rest of the process's life. The CLI
 *   holds it at its starting size until the service listens (`holdDuringStart`); after that it
 *   may grow again, which generation requests (many brief objects) need: holding it small for
 *   good cost them up to 40 % of their throughput in the bench.
 * - Streamed bodies. Each socket read arrives in a fresh 64 KiB buffer that is garbage once written
 *   out, but V8 frees such buffers only at a minor collection, which a small JavaScript heap rarely
 *   needs: an upload left ≈ 35 MB of dead chunks in memory. A minor collection after every few MiB
 *   of streamed bytes (`streamedBytes`) frees them, at well under a millisecond each.
 *
 * - Large short-lived strings. An inline (`b64_json`) answer is a few MB of text built, sent and
 *   dropped per request. Under that traffic Node 24's V8 grows the young generation to 128 MiB
 *   (Node 20's stops at 32 MiB) and keeps it: 40–76 MB more resident memory than Node 20 for the
 *   same requests, which read as growth with the idempotent answers kept (they are not: those are
 *   blobs on disk). After start-up the young generation may grow only up to Node 20's largest
 *   size (`capAfterStart`).
 *
 * Measured in bench/s3-server-upload.mjs, bench/upload.mjs and bench/idempotency-memory.mjs
 * (bench/RESULTS.md, "Memory").
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/** Node 20's largest young generation (two 16 MiB semi-spaces); Node 24's V8 allows four times as much. */
export const YOUNG_GENERATION_CAP_BYTES = 32 * 1024 * 1024;
/** Streamed bytes between two minor collections. */
export const COLLECT_EVERY_BYTES = 4 * 1024 * 1024;
/** V8's own growth factor (Node 20 and 24), put back once the service listens. */
const DEFAULT_GROWTH_FACTOR = 2;
/** Flags by which an operator sizes the young generation themselves: then it is theirs to size. */
const OPERATOR_FLAGS = /--(max-semi-space-size|min-semi-space-size|semi-space-growth-factor|max-heap-size)\b/;

/**
 * Holds the young generation at its starting size until the returned function is called. The
 * growth factor, unlike the semi-space sizes, is read whenever V8 considers growing, so setting it
 * at run time works. Does nothing when the operator sized the young generation.
 */
export function holdDuringStart(execArgv: readonly string[] = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): () => void {
	if (OPERATOR_FLAGS.test(execArgv.join(' ')) || OPERATOR_FLAGS.test(nodeOptions)) return () => undefined;
	setGrowthFactor(1);
	return capAfterStart;
}

/**
 * Lets the young generation grow again, up to YOUNG_GENERATION_CAP_BYTES. Its largest size is fixed
 * when the heap is set up, before any of our code runs; only the growth factor can change later,
 * so after every collection the factor is 1 at the cap and V8's own below it (a size V8 shrank
 * by itself may grow again).
 */
function capAfterStart(): void {
	let held = false;
	setGrowthFactor(DEFAULT_GROWTH_FACTOR);
	const observer = new PerformanceObserver(() => {
		const atCap = youngGenerationBytes() >= YOUNG_GENERATION_CAP_BYTES;
		if (atCap === held) return;
		held = atCap;
		setGrowthFactor(atCap ? 1 : DEFAULT_GROWTH_FACTOR);
	});
	observer.observe({ entryTypes: ['gc'] });
}

function youngGenerationBytes(): number {
	return getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

function setGrowthFactor(factor: number): void {
	setFlagsFromString(`--semi-space-growth-factor=${factor}`);
}

type Collect = (options: { type: 'minor' }) => void;

let collect: Collect | undefined | null;
let sinceLastCollection = 0;

/** V8's collector, reached without a start-up flag: only a context created while `--expose-gc` is set carries `gc`. */
function collector(): Collect | null {
	if (typeof globalThis.gc === 'function') return globalThis.gc as unknown as Collect;
	setFlagsFromString('--expose-gc');
	try {
		const gc: unknown = runInNewContext('gc');
		return typeof gc === 'function' ? (gc as Collect) : null;
	} finally {
		// Contexts made later (vm, workers) get no `gc` of their own.
		setFlagsFromString('--no-expose-gc');
	}
}

/** Counts `bytes` of a streamed body that are about to become garbage; collects the young generation every COLLECT_EVERY_BYTES. */
export function streamedBytes(bytes: number): void {
	sinceLastCollection += bytes;
	if (sinceLastCollection < COLLECT_EVERY_BYTES) return;
	sinceLastCollection = 0;
	if (collect === undefined) collect = collector();
	collect?.({ type: 'minor' });
}
