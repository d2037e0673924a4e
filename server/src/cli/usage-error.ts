/**
 * What the `keys` and `backup` commands share about a command line that cannot mean anything: it
 * is said on stderr under the command's name and exits with 2, before anything was opened or done.
 */
import { ConfigError } from '../config';

/** Where a command writes: its answer on stdout, its complaints on stderr. */
export interface CommandOutput {
	out(text: string): void;
	err(text: string): void;
}

/** A command line the command cannot run (unknown command, missing or misplaced flag). */
export class UsageError extends Error {}

export const USAGE_EXIT_CODE = 2;

/** The exit code for a usage or configuration error, said as `imagegen-server <command>: …`; anything else is rethrown. */
export function reportUsageError(command: string, error: unknown, output: CommandOutput): number {
	if (!(error instanceof UsageError || error instanceof ConfigError)) throw error;
	output.err(`imagegen-server ${command}: ${error.message}\n`);
	return USAGE_EXIT_CODE;
}
