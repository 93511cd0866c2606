/** The identifier of the Tasks extension (SEP-2663) under `capabilities.extensions`. */
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';
