// The environment every n8n process of ours runs with: its own user folder, loopback only, and
// nothing that phones home (telemetry, version checks, templates, banners, package catalogs).
'use strict';
const path = require('node:path');

/**
 * @param {{ userFolder: string, port?: number, nodeBin: string, logLevel?: string, extra?: Record<string, string> }} options
 */
function n8nEnvironment({ userFolder, port, nodeBin, logLevel = 'warn', extra = {} }) {
	const env = {
		...process.env,
		// n8n's own child processes (task runner) must find the same Node 24.
		PATH: `${path.dirname(nodeBin)}${path.delimiter}${process.env.PATH ?? ''}`,
		N8N_USER_FOLDER: userFolder,
		N8N_HOST: '127.0.0.1',
		N8N_LISTEN_ADDRESS: '127.0.0.1',
		N8N_PROTOCOL: 'http',
		N8N_SECURE_COOKIE: 'false',
		N8N_DIAGNOSTICS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_ENABLED: 'false',
		N8N_VERSION_NOTIFICATIONS_WHATS_NEW_ENABLED: 'false',
		N8N_PERSONALIZATION_ENABLED: 'false',
		N8N_TEMPLATES_ENABLED: 'false',
		N8N_HIRING_BANNER_ENABLED: 'false',
		N8N_DYNAMIC_BANNERS_ENABLED: 'false',
		N8N_LICENSE_AUTO_RENEW_ENABLED: 'false',
		N8N_AI_ENABLED: 'false',
		// Modules that fetch catalogs from n8n's servers at start-up.
		N8N_DISABLED_MODULES: 'mcp-registry,instance-ai,workflow-builder,chat-hub,quick-connect,promotions',
		N8N_VERIFIED_PACKAGES_ENABLED: 'false',
		N8N_UNVERIFIED_PACKAGES_ENABLED: 'true',
		N8N_COMMUNITY_PACKAGES_ENABLED: 'true',
		N8N_REINSTALL_MISSING_PACKAGES: 'false',
		N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS: 'false',
		N8N_RUNNERS_BROKER_LISTEN_ADDRESS: '127.0.0.1',
		N8N_LOG_LEVEL: logLevel,
		N8N_LOG_OUTPUT: 'console',
		NODE_ENV: 'production',
		...extra,
	};
	// A user's own npm or NODE_OPTIONS settings for Node 20 must not leak into Node 24.
	delete env.NODE_OPTIONS;
	if (port !== undefined) env.N8N_PORT = String(port);
	return env;
}

module.exports = { n8nEnvironment };
