/** The service configuration: option rows, their parsing, --help and the generated docs page. */
export { configurationMarkdown, helpText } from './option-docs';
export { defaultText, type OptionRow } from './option-row';
export { OPTIONS, parsePriceOverrides } from './options';
export { parseConfig, SERVICE_ARG_OPTIONS } from './parse-config';
export { ConfigError, lacksValue, type InfoRequest } from './read-options';
export { parseProviderSelection, type ProviderSelection } from './provider-selection';
export { LOG_LEVELS, type FileDelivery, type LogLevel, type ModelAliases, type PriceOverrides, type ProvenanceConfig, type ServiceConfig, type StorageConfig } from './service-config';
export type { TrustProxy } from './trust-proxy';
