/**
 * Imported first by the CLI, before anything touches libuv's thread pool (its size is read once,
 * at the pool's first use). File reads and writes, DNS look-ups and every sharp pipeline share that
 * pool, 4 threads by default: the image queue (media/image-work.ts) lets at most 2 pipelines hold a
 * thread, and 8 threads leave at least 6 for the disk however busy image work gets. An operator's
 * own UV_THREADPOOL_SIZE is kept.
 */
const THREADS = 8;

if (!process.env.UV_THREADPOOL_SIZE) process.env.UV_THREADPOOL_SIZE = String(THREADS);

export {};
