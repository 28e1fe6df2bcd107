import { useCallback, useRef, useState } from "react";
import type { TileDiff } from "../render/tiles";

const DEFAULT_LIMIT = 100;

interface HistoryEntry {
  label: string;
  diffs: TileDiff[];
  bytes: number;
}

/**
 * Undo/redo for the canvas. Each step stores only the tiles a command changed
 * (before and after), never a full bitmap, so 100 steps of brush work on a large
 * document stay around 200 MB instead of several GB.
 */
export function useCanvasHistory(limit: number = DEFAULT_LIMIT) {
  const undoStack = useRef<HistoryEntry[]>([]);
  const redoStack = useRef<HistoryEntry[]>([]);
  const [version, setVersion] = useState(0);

  const push = useCallback(
    (label: string, diffs: TileDiff[]) => {
      const bytes = diffs.reduce((sum, d) => sum + d.before.byteLength + d.after.byteLength, 0);
      undoStack.current.push({ label, diffs, bytes });
      if (undoStack.current.length > limit) {
        undoStack.current.shift();
      }
      redoStack.current = [];
      setVersion((v) => v + 1);
    },
    [limit],
  );

  const undo = useCallback((apply: (diffs: TileDiff[], dir: "before") => void) => {
    const entry = undoStack.current.pop();
    if (!entry) return;
    apply(entry.diffs, "before");
    redoStack.current.push(entry);
    setVersion((v) => v + 1);
  }, []);

  const redo = useCallback((apply: (diffs: TileDiff[], dir: "after") => void) => {
    const entry = redoStack.current.pop();
    if (!entry) return;
    apply(entry.diffs, "after");
    undoStack.current.push(entry);
    setVersion((v) => v + 1);
  }, []);

  return {
    push,
    undo,
    redo,
    canUndo: undoStack.current.length > 0,
    canRedo: redoStack.current.length > 0,
    version,
  };
}
