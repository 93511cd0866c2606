import { type FSWatcher, watch } from 'node:fs';
import { basename, dirname } from 'node:path';

/** A watch on the config file; {@link ConfigWatch.close} ends it. */
export interface ConfigWatch {
  /** Stops watching; no call of the listener follows. */
  close(): void;
}

/**
 * Calls `onChange` when the file at `path` changes: written in place, replaced (an editor that
 * saves by renaming a new file over it), or removed and created again.
 *
 * The file itself is watched, not its folder: the audit log and the lock file usually sit beside
 * the config, and a folder watch wakes the process (an inotify event, a read, a callback) on every
 * audited call. A replaced file ends the watch on the old one, so after every event the path is
 * watched again; while the file is missing, its folder is watched until the file is back. When
 * nothing can be watched (no such folder, no inotify left), there is no watch and SIGHUP remains.
 */
export function watchConfigFile(path: string, onChange: () => void): ConfigWatch {
  let current: FSWatcher | undefined;
  let open = true;
  const arm = (): void => {
    current?.close();
    current = undefined;
    if (!open) return;
    let next: FSWatcher;
    try {
      next = watch(path, () => {
        if (current !== next) return;
        onChange();
        arm();
      });
    } catch {
      try {
        next = watch(dirname(path), (_event, file) => {
          if (current !== next || file !== basename(path)) return;
          onChange();
          arm();
        });
      } catch {
        return;
      }
    }
    next.on('error', () => {
      if (current !== next) return;
      // The watched file or folder went away under the watch: try again from the path.
      arm();
    });
    current = next;
  };
  arm();
  return {
    close() {
      open = false;
      current?.close();
      current = undefined;
    },
  };
}
