/** A configuration value the service cannot start with; its message names the flag (and variable) to fix. */
export class ConfigError extends Error {
	constructor(message: string) {
		super(message);
		this.name = 'ConfigError';
	}
}
