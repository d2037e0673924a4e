/**
 * Providers built the way the service builds them: from the configuration the CLI would parse out
 * of `--providers` and the hosts' variables, at the pace a suite against loopback stand-ins wants.
 */
import { parseConfig, type ServiceConfig } from '../../../server/src/config';
import { buildProviderTable, type ProviderTable, type ProviderTiming } from '../../../server/src/generation/providers';

/** Stand-ins answer at once: retries and polls need not wait as they would for a real host. */
export const FAST_HOSTS: ProviderTiming = { retryBaseDelayMs: 10, pollIntervalMs: 20 };

/** The configuration of `--providers <selection>` (and `args`) with the hosts' settings in `env`; throws a ConfigError naming a bad one. */
export function providerConfig(selection: string, env: NodeJS.ProcessEnv = {}, args: string[] = []): ServiceConfig {
	const config = parseConfig(['--providers', selection, ...args], env);
	if (typeof config === 'string') throw new Error(`providerConfig: --${config} is not a configuration`);
	return config;
}

/** The provider table of `--providers <selection>` with the hosts' settings in `env`, at `timing`'s pace. */
export function providersFor(selection: string, env: NodeJS.ProcessEnv = {}, timing: ProviderTiming = FAST_HOSTS, args: string[] = []): ProviderTable {
	return buildProviderTable(providerConfig(selection, env, args), timing);
}
