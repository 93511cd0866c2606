// The Skills API (`@toolfence/tools/skills`): reading, confining and serving Agent Skills, without
// the built-in tools, the MCP connection or the adapters the package's main entry also loads.
export {
  SkillAccessDeniedError,
  SkillArgumentError,
  SkillConfigurationError,
  SkillFormatError,
  SkillLimitError,
  SkillNotFoundError,
  SkillReadError,
  SkillUnsafeFileError,
} from './errors.js';
export {
  SKILL_FRONT_MATTER_KEYS,
  type SkillDeviation,
  type SkillFrontMatterValue,
  type SkillSpecLimits,
} from './front-matter.js';
export { SkillAccessPolicy, type SkillAccessPolicyOptions } from './skill-access-policy.js';
export {
  isValidSkillName,
  type ParsedSkillDocument,
  parseSkillDocument,
  SKILL_NAME_PATTERN,
  type SkillDocument,
  SkillLoader,
  type SkillLoaderOptions,
  type SkillProblem,
  type SkillScan,
} from './skill-loader.js';
export { SkillRegistry, type SkillSource } from './skill-registry.js';
export type { SkillConfinement } from './skill-root.js';
export {
  SKILL_TOOL_CONTRACT,
  SkillAdapter,
  type SkillSummary,
  SkillTool,
  type SkillToolOptions,
} from './skill-tool.js';
