/**
 * How many bytes each stage of an upload's pipeline (multipart parser, inspector, counter, file
 * writer) holds before it asks the one before it to wait. Node 20's default (16 KiB) is a quarter
 * of one socket read, so every chunk cost a pause and a resume at each stage; at 128 KiB a 512 MiB
 * disk upload went from 0.86–0.87 to 0.90–0.97 of a bare pipe's speed (bench/RESULTS.md, "Memory,
 * round two"), for well under a megabyte more per upload in flight.
 */
export const STREAM_HIGH_WATER_MARK = 128 * 1024;
