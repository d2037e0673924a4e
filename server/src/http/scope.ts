/**
 * A plugin registered as its own encapsulated scope (routes, a URL prefix), named after its
 * function. Fastify names a plugin that carries no name by looking for it among the exports of
 * every module in require.cache, at each registration: beside n8n's thousands of modules (the node
 * suites' in-process services) that walk is a real cost at every start, for a name in its messages.
 * fastify-plugin's `encapsulate` keeps the scope a scope.
 */
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';

export function scope(plugin: (instance: FastifyInstance) => Promise<void>): FastifyPluginAsync {
	return fp(plugin, { name: plugin.name, encapsulate: true });
}
