#!/usr/bin/env node
// Runs the MCP conformance suite 0.1.16 (@modelcontextprotocol/conformance) with all arguments
// passed through, on Node 20 too (./run-suite.mjs).
import { runSuite } from './run-suite.mjs';

runSuite('@modelcontextprotocol/conformance');
