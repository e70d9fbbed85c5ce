/**
 * Every feature module's `register(host)`, called once at load. Adding a capability = one import and one entry.
 */
import type { ToolkitHost } from "./host.ts";
import { register as registerCode } from "./tools/code.ts";
import { register as registerHost } from "./tools/host.ts";
import { register as registerHostBash } from "./tools/host-bash.ts";
import { register as registerPlan } from "./plan.ts";
import { register as discovery } from "./tools/discovery.ts";
import { register as registerPatch } from "./tools/patch.ts";
import { register as registerShell } from "./tools/shell.ts";
import { register as registerComputer } from "./tools/computer.ts";
import { register as registerImage } from "./net/image.ts";
import { register as registerWebSearch } from "./net/websearch.ts";
import { register as registerCompaction } from "./compaction.ts";
import { register as registerReview } from "./review.ts";
import { register as registerInteractive } from "./tools/interactive.ts";
import { register as registerAgents, registerDelegateGuard } from "./agents.ts";
import { register as registerWorktrees } from "./worktree.ts";

export const FEATURES: ReadonlyArray<(host: ToolkitHost) => void> = [
	// First: a worktree session's lock, PI_PORT and state are in place before any other session_start handler runs.
	registerWorktrees,
	registerPatch,
	registerShell,
	registerCode,
	discovery,
	registerWebSearch,
	registerImage,
	registerHost,
	registerHostBash,
	// After registerHost: its session_start binds the session's permission state, which the stored mode then sets.
	registerPlan,
	// After registerHost and registerPlan: a delegate's mode and grants land in the session state they bind.
	registerAgents,
	registerDelegateGuard,
	registerReview,
	registerCompaction,
	registerComputer,
	registerInteractive,
];
