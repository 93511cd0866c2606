import { constants, existsSync, type Stats } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { sameFile } from './confined-path.js';

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

/** Why {@link openWorkingDirectory} refused: a stable reason for the tool's message. */
export type WorkingDirectoryRefusal =
  | 'workspace_changed'
  | 'symlink'
  | 'not_found'
  | 'not_a_folder'
  | 'unreadable';

/** A working folder opened through the workspace's descriptors. */
export interface OpenedWorkingDirectory {
  /**
   * `/proc/<pid>/fd/<n>`: the kernel resolves it to the very folder opened, whatever its name
   * or its ancestors' names are now. Valid until {@link OpenedWorkingDirectory.close}.
   */
  readonly handlePath: string;
  close(): Promise<void>;
}

/** Thrown by {@link openWorkingDirectory}; the caller turns it into its own error. */
export class WorkingDirectoryRefusedError extends Error {
  readonly reason: WorkingDirectoryRefusal;
  constructor(reason: WorkingDirectoryRefusal) {
    super(`working folder refused: ${reason}`);
    this.name = 'WorkingDirectoryRefusedError';
    this.reason = reason;
  }
}

/** True when a child can be started in a folder named by the host's descriptor (Linux `/proc`). */
export function descriptorWorkingDirectoriesWork(): boolean {
  return process.platform === 'linux' && existsSync(`/proc/${process.pid}/fd`);
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Opens `segments` (already checked: no `.`, `..` or empty segment) below the workspace through
 * descriptors only: the workspace with `O_DIRECTORY | O_NOFOLLOW`, checked to be the folder
 * taken at construction (`workspaceStat`), then each segment with `O_DIRECTORY | O_NOFOLLOW`
 * inside its parent's descriptor (`/proc/self/fd/<fd>/<name>`, the `openat` Node lacks). A
 * link anywhere fails the open (`ELOOP`), so a folder swapped for a link at any moment never
 * leads outside. The result names the last folder by descriptor, for the child's `chdir`.
 */
export async function openWorkingDirectory(
  workspace: string,
  workspaceStat: Stats,
  segments: readonly string[],
): Promise<OpenedWorkingDirectory> {
  let current: FileHandle;
  try {
    current = await open(workspace, DIRECTORY_FLAGS);
  } catch {
    throw new WorkingDirectoryRefusedError('workspace_changed');
  }
  try {
    if (!sameFile(await current.stat(), workspaceStat)) {
      throw new WorkingDirectoryRefusedError('workspace_changed');
    }
    for (const segment of segments) {
      let next: FileHandle;
      try {
        next = await open(`/proc/self/fd/${current.fd}/${segment}`, DIRECTORY_FLAGS);
      } catch (error) {
        const code = codeOf(error);
        throw new WorkingDirectoryRefusedError(
          code === 'ELOOP'
            ? 'symlink'
            : code === 'ENOENT'
              ? 'not_found'
              : code === 'ENOTDIR'
                ? 'not_a_folder'
                : 'unreadable',
        );
      }
      await current.close();
      current = next;
    }
  } catch (error) {
    await current.close();
    throw error;
  }
  const opened = current;
  return {
    handlePath: `/proc/${process.pid}/fd/${opened.fd}`,
    close: () => opened.close(),
  };
}
