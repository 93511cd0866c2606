import { ToolsError } from '../tools-error.js';

/** A Skills option (root, limit, allowlist, tool name) is invalid. */
export class SkillConfigurationError extends ToolsError {
  static override readonly code: string = 'SKILL_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillConfigurationError');
}

/**
 * A skill path is unsafe: a symlink anywhere (root, folder, file), a hard link, something
 * other than a regular file, or a file swapped or changed while it was read.
 */
export class SkillUnsafeFileError extends ToolsError {
  static override readonly code: string = 'SKILL_UNSAFE_FILE';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillUnsafeFileError');
}

/** A Skills limit was exceeded (file bytes, skills, scan entries, front matter lines, content). */
export class SkillLimitError extends ToolsError {
  static override readonly code: string = 'SKILL_LIMIT_EXCEEDED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillLimitError');
}

/**
 * A SKILL.md is malformed: invalid folder or skill name, name not equal to its folder, front
 * matter outside the supported subset, not UTF-8, or containing NUL.
 */
export class SkillFormatError extends ToolsError {
  static override readonly code: string = 'SKILL_FORMAT';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillFormatError');
}

/** Reading the skills folder failed for another reason (permissions, I/O). */
export class SkillReadError extends ToolsError {
  static override readonly code: string = 'SKILL_READ';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillReadError');
}

/** No skill of that name is loaded. */
export class SkillNotFoundError extends ToolsError {
  static override readonly code: string = 'SKILL_NOT_FOUND';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillNotFoundError');
}

/** The access policy does not allow that skill. */
export class SkillAccessDeniedError extends ToolsError {
  static override readonly code: string = 'SKILL_ACCESS_DENIED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillAccessDeniedError');
}

/** The skill tool got arguments it does not accept. */
export class SkillArgumentError extends ToolsError {
  static override readonly code: string = 'SKILL_INVALID_ARGUMENT';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SkillArgumentError');
}
