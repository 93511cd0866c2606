// Package metadata

// Errors
export { HostConfigError, type HostConfigErrorOptions } from './host-config-error.js';
export { VERSION } from './version.js';
