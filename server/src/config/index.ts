/** The service configuration: option rows, their parsing, --help and the generated docs page. */
export { ConfigError } from './config-error';
export { configurationMarkdown } from './configuration-doc';
export { helpText } from './help';
export { defaultText, type OptionRow } from './option-row';
export { OPTIONS } from './options';
export { parseConfig } from './parse-config';
export type { InfoRequest } from './read-options';
export { parsePriceOverrides, type PriceOverrides } from './prices';
export { parseProviderSelection, type ProviderSelection } from './provider-selection';
export { LOG_LEVELS, type FileDelivery, type LogLevel, type ProvenanceConfig, type ServiceConfig, type StorageConfig } from './service-config';
export type { TrustProxy } from './trust-proxy';
