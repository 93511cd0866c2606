#!/usr/bin/env node
// Runs the MCP conformance suite 0.2.0-alpha (installed as `conformance-alpha`, the suite for
// MCP 2026-07-28) with all arguments passed through, on Node 20 too (./run-suite.mjs).
import { runSuite } from './run-suite.mjs';

runSuite('conformance-alpha');
