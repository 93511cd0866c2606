// A `node --import` preload that lets the MCP conformance suites start on Node 20. Both suites
// (@modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha) import `globSync` from 'fs', which
// Node has only from 22; they use it only in `tier-check`, never in the `client` and `server`
// modes the tests run. The resolve hook registered here gives the suites' own modules an 'fs'
// with that one export added (./node20-fs-glob-hooks.mjs); every other module is untouched.
import { register } from 'node:module';

register('./node20-fs-glob-hooks.mjs', import.meta.url);
