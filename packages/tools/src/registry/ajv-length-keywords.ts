import type { Ajv, KeywordCxt } from 'ajv';
import { lazyRequire } from '../internal/lazy-require.js';

// ajv's codegen and its code-point counter, loaded with ajv itself (this runs only on an ajv
// instance, so ajv is already loaded).
const ajvModule = lazyRequire<typeof import('ajv')>('ajv');
const ajvUtil = lazyRequire<typeof import('ajv/dist/compile/util.js')>('ajv/dist/compile/util.js');
const ucs2lengthModule = lazyRequire<typeof import('ajv/dist/runtime/ucs2length.js')>(
  'ajv/dist/runtime/ucs2length.js',
);

/**
 * Makes `maxLength` and `minLength` count code points only when the UTF-16 length cannot decide:
 * a string has at most `length` and at least `length / 2` code points, so `length <= max` passes
 * `maxLength` and `length >= 2 * min` passes `minLength` without a count (ajv counts every
 * string's code points, the right measure for JSON Schema, and the largest part of checking a
 * short string). The verdicts, messages, params and keyword order are ajv's own: only the
 * generated condition changes, in this instance's copy of each keyword's definition. An ajv
 * whose keyword definitions look different is left as it is (slower, never wrong).
 */
export function installLengthShortcuts(ajv: Pick<Ajv, 'getKeyword'>): void {
  for (const keyword of ['maxLength', 'minLength'] as const) {
    const definition = ajv.getKeyword(keyword);
    if (
      typeof definition !== 'object' ||
      typeof (definition as { code?: unknown }).code !== 'function'
    ) {
      continue;
    }
    (definition as { code: (cxt: KeywordCxt) => void }).code =
      keyword === 'maxLength' ? maxLengthCode : minLengthCode;
  }
}

function maxLengthCode(cxt: KeywordCxt): void {
  const { _ } = ajvModule();
  const { data, schemaCode } = cxt;
  const count = ajvUtil().useFunc(cxt.gen, ucs2lengthModule().default);
  cxt.fail$data(_`${data}.length > ${schemaCode} && ${count}(${data}) > ${schemaCode}`);
}

function minLengthCode(cxt: KeywordCxt): void {
  const { _ } = ajvModule();
  const { data, schemaCode } = cxt;
  const count = ajvUtil().useFunc(cxt.gen, ucs2lengthModule().default);
  cxt.fail$data(_`${data}.length < 2 * ${schemaCode} && ${count}(${data}) < ${schemaCode}`);
}
