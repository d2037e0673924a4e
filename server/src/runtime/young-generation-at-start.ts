/**
 * Imported by the CLI right after the thread pool, before the modules of the service load: holds
 * V8's young generation small through start-up (see young-generation.ts). The CLI calls
 * `releaseYoungGeneration` once the service listens.
 */
import { holdDuringStart } from './young-generation';

export const releaseYoungGeneration = holdDuringStart();
