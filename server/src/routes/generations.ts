/**
 * Generation routes. Receives the /v1-scoped instance: paths are relative to /v1, and the Bearer
 * auth and rate-limit hooks already run before any handler (request.apiKeyId is set).
 * Placeholder until the generation module registers POST /images/generations and GET /usage.
 */
import type { FastifyInstance } from 'fastify';
import type { ServiceContext } from '../context';

export async function registerGenerationRoutes(_v1: FastifyInstance, _context: ServiceContext): Promise<void> {}
