/**
 * Every PostgreSQL engine in one module, so that the service loads `pg` and them with one dynamic
 * import when `--database-url` is given, and never otherwise (engines.ts).
 */
export { openDatabase } from '../db/postgres/postgres';
