export * from './core/models';
export * from './core/errors';
export * from './core/media';
export * from './core/schemas';
export * from './core/upload-options';
export * from './core/api';
export * from './core/request';
export * from './core/retry-policy';
