/**
 * Imported first by the CLI, before anything else loads: restarts it with glibc's mmap threshold
 * fixed (see malloc-threshold.ts).
 */
import { restartWithFixedMmapThreshold } from './malloc-threshold';

restartWithFixedMmapThreshold();
