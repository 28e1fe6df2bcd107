import { z } from "zod";

/** Thrown when the settings file is not valid; `path` names the offending key. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(`${path}: ${message}`);
  }
}

const BrushDefaults = z.object({
  size: z.number().int().min(1).max(2000).default(24),
  hardness: z.number().min(0).max(1).default(0.8),
  spacing: z.number().min(0.01).max(2).default(0.1),
});

const EditorSettings = z.object({
  theme: z.enum(["light", "dark", "system"]).default("system"),
  maxUndoSteps: z.number().int().min(10).max(500).default(100),
  autosaveIntervalMs: z.number().int().min(5000).default(30000),
  tileSize: z.literal(256).default(256),
  brush: BrushDefaults.default({}),
  flags: z.record(z.string(), z.boolean()).default({}),
});

export type EditorSettings = z.infer<typeof EditorSettings>;

/**
 * Parse the user's settings JSON. Missing keys get defaults; a wrong type or an
 * unknown theme throws ConfigError with the key path, so the settings dialog can
 * highlight the field instead of showing a stack trace.
 */
export function parseConfig(raw: string): EditorSettings {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (err) {
    throw new ConfigError("not valid JSON", "$");
  }
  const result = EditorSettings.safeParse(data);
  if (!result.success) {
    const issue = result.error.issues[0];
    throw new ConfigError(issue.message, issue.path.join(".") || "$");
  }
  return result.data;
}
