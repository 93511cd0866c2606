import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { VERSION } from './index.js';

describe('public surface of @toolfence/tool-contract', () => {
  it('exports exactly the pinned runtime names', () => {
    expect(Object.keys(api).sort()).toEqual(
      [
        // Package metadata
        'VERSION',
        // Taxonomies
        'CONTENT_TRUST_LEVELS',
        'RISK_LEVEL_ORDER',
        'RISK_LEVELS',
        'compareContentTrust',
        'compareRisk',
        'isContentTrustLevel',
        'isRiskLevel',
        'maxContentTrust',
        'maxRisk',
        // Declaring
        'CONTRACT_DEFAULTS',
        'defineContract',
        // Attaching and annotations
        'ANNOTATION_ALIASES',
        'ANNOTATION_CONTENT_TRUST_RISK',
        'ANNOTATION_DEPRECATED_SINCE',
        'ANNOTATION_REPLACEMENT',
        'ANNOTATION_RISK_LEVEL',
        'ANNOTATION_SUNSET',
        'ANNOTATION_VERSION',
        'CONTRACT_META_KEY',
        'getContract',
        'openWorldFor',
        'toolAnnotations',
        'withContract',
        'withContractAnnotations',
        // Reading
        'DEFAULT_MAX_ALIASES',
        'UNKNOWN_VERSION',
        'readContract',
        // JSON Schema
        'CONTRACT_ANNOTATIONS_JSON_SCHEMA',
        // Precedence, downgrades, fingerprint
        'catalogFingerprint',
        'defineOverride',
        'detectDowngrades',
        'effectiveContract',
        // Heuristic fallback
        'HEURISTIC_DEFAULT_CONTENT_TRUST',
        'HEURISTIC_DEFAULT_RISK',
        'HEURISTIC_RISK_RULES',
        'HEURISTIC_TRUST_RULES',
        'HEURISTIC_VERSION',
        'HEURISTIC_GIT_READ_WORDS',
        'HEURISTIC_OPEN_READ_OBJECTS',
        'HEURISTIC_READ_OBJECT_WORDS',
        'hintRiskFloor',
        'withHintFloor',
        'heuristicContract',
        // Errors
        'ContractDefinitionError',
        'ContractReadError',
        'ToolContractError',
      ].sort(),
    );
  });

  it('reports the version of its package.json', () => {
    const manifest = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
    expect(VERSION).toBe(manifest.version);
  });
});
