#!/usr/bin/env node
// `pnpm check` step "outside paths": nothing in the repository reads or imports a path outside
// it. A clone has only what is committed; a test that imports a file from a sibling folder of
// the checkout (`..` then `shared`) or reads an absolute path beside it passes where that folder
// happens to lie beside the checkout and fails everywhere else. Scans every file git tracks (and new files it does not ignore), or every file
// under `--root DIR` when DIR is not a git checkout, and fails on:
//
// 1. a relative module specifier (`import`, `export ... from`, `import()`, `require()`,
//    `vi.mock()`, `import('...')` types) that resolves outside the repository, to no file in it,
//    or to a file git ignores (build output in dist/ excepted); an absolute one (`/...`,
//    `file:`) anywhere;
// 2. a path built from the file's own location (`new URL(..., import.meta.url)`,
//    `import.meta.dirname`, `__dirname`, `fileURLToPath`, `dirname`, `join`, `resolve`, through
//    `const` names of the same file) that ends outside the repository, such as
//    `join(REPO_ROOT, '..', 'shared')`;
// 3. a relative path in a string (code) or in any other text (package.json scripts, tsconfig,
//    YAML, shell, Markdown) that climbs out of the repository from the file's folder or its
//    package's folder (`node` with three `..` climbs), or whose first named folder is not in
//    the repository but lies beside it or beside a folder above it (a `shared` folder next to the
//    checkout on some machine);
// 4. an absolute path to the checkout itself or to a folder above it, or to something that
//    exists on this machine outside the repository two levels deep or more, system folders
//    (`/usr`, `/etc`, `/tmp`, ...) and the temporary folder excepted: `/work/shared/...` is
//    refused, while test data such as `/home/u/spec.pdf` or `/srv/agent/workspace` (nothing
//    there) and words such as `@modelcontextprotocol/sdk/shared/transport.js` are not paths;
// 5. a tracked symbolic link whose target is outside the repository.
//
// Comments are not read in code files (a comment may name a folder in words). pnpm-lock.yaml is
// not read: it mirrors the package.json files (which are), and its `link:` paths are relative to
// each importer rather than to the lockfile.
//
// Usage: node scripts/check-outside-paths.mjs [--root DIR]. Prints one line per finding
// (`file:line: what`) and exits 1 when there is any.
import { execFileSync } from 'node:child_process';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const CODE = /\.(?:[cm]?[jt]s|[jt]sx)$/;
const SKIPPED_FOLDERS = new Set(['node_modules', '.git', 'dist', '.turbo', 'coverage']);
const SKIPPED_FILES = new Set(['pnpm-lock.yaml']);
const BINARY = /\.(?:wasm|png|jpe?g|gif|ico|tgz|gz|zip|pdf|node|sqlite|db)$/i;
/** Top-level folders of the operating system: a path into them is about the machine, not us. */
const SYSTEM = new Set([
  'bin',
  'boot',
  'dev',
  'etc',
  'lib',
  'lib32',
  'lib64',
  'libx32',
  'opt',
  'proc',
  'run',
  'sbin',
  'sys',
  'tmp',
  'usr',
  'var',
  'snap',
  'nix',
  'System',
  'Library',
  'Applications',
  'private',
  'Volumes',
]);
/** Module-loading calls whose first argument is a specifier relative to the file. */
const LOADERS = new Set(['require', 'import', 'mock', 'doMock', 'unmock', 'importActual']);
/** Extensions a TypeScript-style specifier may stand for. */
const SPECIFIER_TARGETS = {
  '.js': ['.js', '.ts', '.tsx', '.jsx'],
  '.mjs': ['.mjs', '.mts'],
  '.cjs': ['.cjs', '.cts'],
  '.jsx': ['.jsx', '.tsx'],
};

const RELATIVE_TOKEN = /(?<![\w@.$/\\~-])((?:\.\.\/)+[^\s'"`)\]}>,;:*|<]*)/g;
const ABSOLUTE_TOKEN = /(?<![\w@.$/\\~:%-])(\/[A-Za-z0-9_@.+-]+(?:\/[A-Za-z0-9_@.+*-]*)*)/g;

/** The path of a file: URL, or undefined (another host, a malformed URL). */
function urlPath(url) {
  try {
    return fileURLToPath(url);
  } catch {
    return undefined;
  }
}

/**
 * A JSON file that no tool reads as configuration (recorded server replies, test data): absolute
 * paths in it are what some other machine said (rule 4 is not applied), relative climbs still are.
 */
function isData(file) {
  if (!file.endsWith('.json')) return false;
  const name = file.split('/').pop();
  const depth = file.split('/').length;
  return !(name === 'package.json' || /^tsconfig.*\.json$/.test(name) || depth <= 2);
}

/** Is `path` the folder `folder` or inside it? */
function within(folder, path) {
  const rel = relative(folder, path);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** Every file to scan, relative to `root`, with git's view when `root` is a checkout. */
function listFiles(root) {
  let top;
  try {
    top = execFileSync('git', ['rev-parse', '--show-toplevel'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {}
  if (top && resolve(top) === resolve(root)) {
    const listed = execFileSync(
      'git',
      ['ls-files', '-z', '--cached', '--others', '--exclude-standard'],
      { cwd: root, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
    );
    return [...new Set(listed.split('\0').filter(Boolean))];
  }
  const files = [];
  const walk = (folder) => {
    for (const entry of readdirSync(join(root, folder), { withFileTypes: true })) {
      const path = folder === '' ? entry.name : `${folder}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!SKIPPED_FOLDERS.has(entry.name)) walk(path);
      } else files.push(path);
    }
  };
  walk('');
  return files;
}

/** Scans the repository at `root`; returns its findings (`{ file, line, message }`). */
export function findOutsidePaths(root) {
  root = resolve(root);
  const temp = resolve(tmpdir());
  const ancestors = [];
  for (let folder = dirname(root); folder !== dirname(folder); folder = dirname(folder)) {
    ancestors.push(folder);
  }
  /** The files of the repository (every file below it when it is not a git checkout). */
  let listed;
  /** The folders above the repository, up to the temporary folder or the file system's root. */
  const near = ancestors.filter((folder) => !within(folder, temp));
  const findings = [];
  const seen = new Set();
  const report = (file, line, message) => {
    const key = `${file}:${line}:${message}`;
    if (seen.has(key)) return;
    seen.add(key);
    findings.push({ file, line, message });
  };

  /** The folder of the nearest package.json at or above `folder`, inside the repository. */
  const packageFolder = (folder) => {
    for (let at = folder; within(root, at); at = dirname(at)) {
      if (existsSync(join(at, 'package.json'))) return at;
      if (at === root) break;
    }
    return root;
  };

  /**
   * For a path inside the repository that does not exist: the place beside the repository (or
   * beside a folder above it) that has its first missing folder, if any (`shared/` next to the
   * checkout for `packages/x/shared/y.mjs`).
   */
  const besideReach = (target) => {
    let existing = target;
    let missing;
    while (!existsSync(existing) && within(root, existing) && existing !== root) {
      missing = existing.slice(dirname(existing).length + 1);
      existing = dirname(existing);
    }
    if (missing === undefined) return undefined;
    const beside = ancestors
      .map((folder) => join(folder, missing))
      .find((path) => existsSync(path));
    return beside && !within(root, beside) ? { missing, beside } : undefined;
  };

  /** Rule 3: a relative path token in a string or text, seen from `folder`. */
  const checkRelative = (file, line, token, folder) => {
    const bases = [...new Set([folder, packageFolder(folder)])];
    for (const base of bases) {
      const target = resolve(base, token);
      if (!within(root, target)) {
        report(file, line, `"${token}" leads to ${target}, outside the repository`);
        return;
      }
    }
    if (bases.some((base) => existsSync(resolve(base, token)))) return;
    const reach = besideReach(resolve(folder, token));
    if (reach) {
      report(
        file,
        line,
        `"${token}" names ${reach.missing}, which is not in the repository but lies beside it (${reach.beside})`,
      );
    }
  };

  /** Rule 4: an absolute path in a string or text. */
  const checkAbsolute = (file, line, path) => {
    const normal = resolve(path);
    if (within(root, normal)) {
      report(file, line, `"${path}" names the checkout's own location; use a relative path`);
      return;
    }
    if (near.includes(normal)) {
      report(file, line, `"${path}" names a folder above the repository`);
      return;
    }
    for (const folder of near.filter((above) => within(above, normal))) {
      const beside = join(folder, relative(folder, normal).split(sep)[0]);
      if (existsSync(beside)) {
        report(file, line, `"${path}" reaches ${beside}, beside the repository`);
        return;
      }
    }
    const segments = normal.split('/').filter(Boolean);
    if (segments.length < 2 || SYSTEM.has(segments[0]) || within(temp, normal)) return;
    for (let depth = 2; depth <= segments.length; depth += 1) {
      const prefix = `/${segments.slice(0, depth).join('/')}`;
      if (!existsSync(prefix)) break;
      if (!within(temp, prefix)) {
        report(file, line, `"${path}" reaches ${prefix}, which exists outside the repository`);
        return;
      }
    }
  };

  /** Rules 3 and 4 over a piece of text that starts on line `line`. */
  const scanText = (
    file,
    line,
    text,
    folder,
    { relativeTokens = true, absolutePaths = true } = {},
  ) => {
    const blanked = text.replace(/file:\/\//g, '       ');
    const lineOf = (index) => line + (blanked.slice(0, index).match(/\n/g)?.length ?? 0);
    for (const match of relativeTokens ? blanked.matchAll(RELATIVE_TOKEN) : []) {
      checkRelative(file, lineOf(match.index), match[1], folder);
    }
    for (const match of absolutePaths ? blanked.matchAll(ABSOLUTE_TOKEN) : []) {
      checkAbsolute(file, lineOf(match.index), match[1]);
    }
  };

  /** Rule 1: a module specifier of `file` (in `folder`). */
  const checkSpecifier = (file, line, specifier, folder) => {
    if (specifier.startsWith('file:') || isAbsolute(specifier)) {
      report(file, line, `imports "${specifier}", an absolute path`);
      return;
    }
    if (!/^\.\.?\//.test(specifier)) return;
    const target = resolve(folder, specifier.replace(/[?#].*$/, ''));
    if (!within(root, target)) {
      report(file, line, `imports "${specifier}", which is ${target}, outside the repository`);
      return;
    }
    const extension = /\.[cm]?jsx?$/.exec(target)?.[0];
    const stem = extension ? target.slice(0, -extension.length) : target;
    const candidates = [
      target,
      ...(SPECIFIER_TARGETS[extension] ?? []).map((ext) => stem + ext),
      ...['.ts', '.tsx', '.js', '.mjs', '.json'].map((ext) => target + ext),
      ...['index.ts', 'index.js'].map((name) => join(target, name)),
    ];
    // Build output (`dist/`) is made by `pnpm build`, which both README commands run first.
    const built = relative(root, target)
      .split(sep)
      .some((segment) => SKIPPED_FOLDERS.has(segment));
    const found = candidates.find((candidate) => existsSync(candidate));
    if (!built && found && listed && !listed.has(found)) {
      report(file, line, `imports "${specifier}", which git ignores (a clone would not have it)`);
      return;
    }
    if (!built && !found) {
      report(
        file,
        line,
        `imports "${specifier}", which is no file in the repository (a clone would not have it)`,
      );
    }
  };

  const scanCode = (file, text) => {
    const absolute = join(root, file);
    const folder = dirname(absolute);
    const kind = /\.[cm]?tsx?$/.test(file)
      ? file.endsWith('x')
        ? ts.ScriptKind.TSX
        : ts.ScriptKind.TS
      : file.endsWith('x')
        ? ts.ScriptKind.JSX
        : ts.ScriptKind.JS;
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, kind);
    const lineOf = (node) => source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;

    // `const NAME = expression` of this file, for the path evaluator (names declared twice are
    // left out: which one a use means would need scopes).
    const constants = new Map();
    const twice = new Set();
    const collect = (node) => {
      if (
        ts.isVariableDeclaration(node) &&
        ts.isIdentifier(node.name) &&
        node.initializer &&
        ts.isVariableDeclarationList(node.parent) &&
        node.parent.flags & ts.NodeFlags.Const
      ) {
        if (constants.has(node.name.text)) twice.add(node.name.text);
        constants.set(node.name.text, node.initializer);
      }
      ts.forEachChild(node, collect);
    };
    collect(source);
    for (const name of twice) constants.delete(name);

    const fileUrl = pathToFileURL(absolute);
    const calleeName = (expression) =>
      ts.isIdentifier(expression)
        ? expression.text
        : ts.isPropertyAccessExpression(expression)
          ? expression.name.text
          : undefined;
    /** A path (`{ path }`), URL (`{ url }`) or string (`{ text }`) the expression always is. */
    const evaluate = (node, depth = 0) => {
      if (depth > 20) return undefined;
      const next = (inner) => evaluate(inner, depth + 1);
      if (ts.isParenthesizedExpression(node) || ts.isAsExpression(node)) {
        return next(node.expression);
      }
      if (ts.isNonNullExpression(node) || ts.isSatisfiesExpression?.(node)) {
        return next(node.expression);
      }
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        return { text: node.text };
      }
      if (ts.isTemplateExpression(node)) {
        // `${ROOT}/../x` is a path when it starts with one; unknown parts stand for a name.
        const parts = node.templateSpans.map((span) => next(span.expression));
        const start = node.head.text === '' ? parts[0]?.path : undefined;
        let text = start === undefined ? node.head.text : '';
        node.templateSpans.forEach((span, index) => {
          if (index > 0 || start === undefined) text += parts[index]?.text ?? '_';
          text += span.literal.text;
        });
        return start === undefined ? { text } : { path: resolve(`${start}${text}`) };
      }
      if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.PlusToken) {
        const left = next(node.left);
        const right = next(node.right);
        if (right?.text === undefined) return undefined;
        if (left?.path !== undefined) return { path: resolve(left.path + right.text) };
        if (left?.text !== undefined) return { text: left.text + right.text };
        return undefined;
      }
      if (ts.isIdentifier(node)) {
        if (node.text === '__dirname') return { path: folder };
        if (node.text === '__filename') return { path: absolute };
        const initializer = constants.get(node.text);
        return initializer ? next(initializer) : undefined;
      }
      if (ts.isPropertyAccessExpression(node)) {
        if (ts.isMetaProperty(node.expression)) {
          if (node.name.text === 'url') return { url: fileUrl };
          if (node.name.text === 'dirname') return { path: folder };
          if (node.name.text === 'filename') return { path: absolute };
        }
        return undefined;
      }
      if (ts.isNewExpression(node) && calleeName(node.expression) === 'URL') {
        const [first, base] = node.arguments ?? [];
        const spec = first && next(first);
        const against = base && next(base);
        if (spec?.text === undefined) return undefined;
        try {
          if (against?.url) return { url: new URL(spec.text, against.url) };
          if (!base && spec.text.startsWith('file:')) return { url: new URL(spec.text) };
        } catch {}
        return undefined;
      }
      if (ts.isCallExpression(node)) {
        const name = calleeName(node.expression);
        const args = node.arguments.map((argument) => next(argument));
        if (name === 'fileURLToPath') {
          const [value] = args;
          const path = urlPath(value?.url ?? (value?.text?.startsWith('file:') && value.text));
          return path === undefined ? undefined : { path };
        }
        if (name === 'pathToFileURL' && args[0]?.path) return { url: pathToFileURL(args[0].path) };
        if (name === 'dirname' && args.length === 1 && args[0]?.path) {
          return { path: dirname(args[0].path) };
        }
        if ((name === 'join' || name === 'resolve') && args.length > 0) {
          if (args.some((value) => value === undefined || value.url)) return undefined;
          const parts = args.map((value) => value.path ?? value.text);
          if (name === 'join' && args[0].path) return { path: join(...parts) };
          if (name === 'resolve') {
            const last = parts.findLastIndex((part) => isAbsolute(part));
            if (last >= 0) return { path: resolve(...parts.slice(last)) };
          }
          if (name === 'join' && !isAbsolute(parts[0])) return { text: join(...parts) };
        }
      }
      return undefined;
    };

    /** Strings whose relative paths rule 1 or rule 2 judged exactly (specifiers, anchored paths). */
    const judged = new Set();
    const judge = (node) => {
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) judged.add(node);
      if (ts.isTemplateExpression(node)) judged.add(node);
      ts.forEachChild(node, judge);
    };
    const specifier = (node, text) => {
      judged.add(node);
      checkSpecifier(file, lineOf(node), text, folder);
    };

    const visit = (node) => {
      // Rule 1: module specifiers.
      if (
        (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
        node.moduleSpecifier &&
        ts.isStringLiteral(node.moduleSpecifier)
      ) {
        specifier(node.moduleSpecifier, node.moduleSpecifier.text);
      } else if (
        ts.isImportEqualsDeclaration(node) &&
        ts.isExternalModuleReference(node.moduleReference) &&
        ts.isStringLiteral(node.moduleReference.expression)
      ) {
        specifier(node.moduleReference.expression, node.moduleReference.expression.text);
      } else if (
        ts.isImportTypeNode(node) &&
        ts.isLiteralTypeNode(node.argument) &&
        ts.isStringLiteral(node.argument.literal)
      ) {
        specifier(node.argument.literal, node.argument.literal.text);
      } else if (ts.isCallExpression(node)) {
        const callee =
          node.expression.kind === ts.SyntaxKind.ImportKeyword
            ? 'import'
            : calleeName(node.expression);
        const [first] = node.arguments;
        if (
          LOADERS.has(callee) &&
          first &&
          (ts.isStringLiteral(first) || ts.isNoSubstitutionTemplateLiteral(first)) &&
          (callee !== 'mock' &&
          callee !== 'doMock' &&
          callee !== 'unmock' &&
          callee !== 'importActual'
            ? true
            : ts.isPropertyAccessExpression(node.expression))
        ) {
          specifier(first, first.text);
        }
      }
      // Rule 2: paths built from the file's own location.
      if (
        ts.isCallExpression(node) ||
        ts.isNewExpression(node) ||
        ts.isTemplateExpression(node) ||
        ts.isBinaryExpression(node)
      ) {
        const value = evaluate(node);
        const path =
          value?.path ?? (value?.url?.protocol === 'file:' ? urlPath(value.url) : undefined);
        if (path !== undefined) {
          judge(node);
          const reach = within(root, path) ? besideReach(path) : undefined;
          if (!within(root, path)) {
            report(file, lineOf(node), `builds the path ${path}, outside the repository`);
          } else if (reach) {
            report(
              file,
              lineOf(node),
              `builds the path ${path}: ${reach.missing} is not in the repository but lies beside it (${reach.beside})`,
            );
          }
        }
      }
      // Rules 3 and 4: paths written in strings.
      const options = { relativeTokens: !judged.has(node) };
      if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
        scanText(file, lineOf(node), node.text, folder, options);
      } else if (ts.isTemplateExpression(node)) {
        scanText(file, lineOf(node), node.head.text, folder, options);
        for (const span of node.templateSpans) {
          scanText(file, lineOf(span.literal), span.literal.text, folder, options);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  };

  const files = listFiles(root);
  listed = new Set(files.map((file) => join(root, file)));
  for (const file of files) {
    const absolute = join(root, file);
    const name = file.split('/').pop();
    if (SKIPPED_FILES.has(name) || BINARY.test(name)) continue;
    if (file.split('/').some((segment) => SKIPPED_FOLDERS.has(segment))) continue;
    let stat;
    try {
      stat = lstatSync(absolute);
    } catch {
      continue; // deleted in the working tree
    }
    if (stat.isSymbolicLink()) {
      const target = resolve(dirname(absolute), readlinkSync(absolute));
      if (!within(root, target))
        report(file, 1, `is a symbolic link to ${target}, outside the repository`);
      continue;
    }
    if (!stat.isFile()) continue;
    const text = readFileSync(absolute, 'utf8');
    if (text.includes('\0')) continue;
    if (CODE.test(name)) scanCode(file, text);
    else scanText(file, 1, text, dirname(absolute), { absolutePaths: !isData(file) });
  }
  return findings.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const root = argv.includes('--root')
    ? resolve(argv[argv.indexOf('--root') + 1])
    : resolve(import.meta.dirname, '..');
  const findings = findOutsidePaths(root);
  for (const { file, line, message } of findings) console.error(`${file}:${line}: ${message}`);
  if (findings.length > 0) {
    console.error(
      `outside paths: ${findings.length} place(s) reach outside the repository; a clone has only what is committed`,
    );
    process.exit(1);
  }
  console.log('outside paths: nothing reaches outside the repository');
}
