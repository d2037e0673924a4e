/** The service configuration: option rows, their parsing, --help and the generated docs page. */
export { configurationMarkdown, helpText } from './option-docs';
export { defaultText, type OptionRow } from './option-row';
export { OPTIONS } from './options';
export type { ProviderSettings } from './provider-options';
export { parseConfig, SERVICE_ARG_OPTIONS } from './parse-config';
export { ConfigError, lacksValue, type InfoRequest } from './read-options';
export type { ModelAliases, PriceOverrides, ServiceConfig, StorageConfig } from './service-config';
