/** Programmatic entry points of imagegen-server (the CLI is the usual way in). */
export { createService, buildApp, type Service } from './app';
export { parseConfig, helpText, ConfigError, type ServiceConfig } from './config';
export { classifyAddress } from './net/address-policy';
export { createSafeFetcher, type FetchPolicy, type HostResolver } from './net/safe-fetch';
export { DiskFileStore } from './storage/disk-file-store';
export type { ServiceContext, RemoteFetcher } from './context';
