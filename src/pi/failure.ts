/**
 * How a failing toolkit call reaches Pi (docs/render.md "Errors"): failures are data. On Pi 1.x a result a tool
 * returns with `isError: true` is an error result (its agent loop reads `result.isError`), so a failure returns its
 * text for the model (`CODE: message`) with `details.errorCode` — the engine's stable code — and the structured
 * fields (exit code, streams, Glob suggestion, live tag) that the renderers switch on; no renderer parses the text.
 * Pi 0.87's agent loop ignores a returned `isError` (only a thrown error makes an error result), so there the same
 * text is thrown, as it always was; the failure's data is kept in this process by call id (`thrownFailure`), so the
 * rows Pi draws here still switch on the code. A row drawn later from a saved session shows the text as it is.
 */
import { VERSION } from "@earendil-works/pi-coding-agent";
import type { HostAuditEntry } from "../../index.js";

/** Every stable code a toolkit tool fails with: the audit line's union (index.d.ts), one list for both. */
export type ToolErrorCode = NonNullable<HostAuditEntry["errorCode"]>;

/** True on Pi 1.x: a returned `isError` result is an error result there (see the file header). */
export const FAILURES_AS_DATA: boolean = Number.parseInt(VERSION, 10) >= 1;

/** The `details` of a failed call: the code and the call's structured fields. */
export interface FailureDetails {
	errorCode: ToolErrorCode;
	[field: string]: unknown;
}

/** A failed call's result as a tool returns it on Pi 1.x. */
export interface FailedResult {
	content: { type: "text"; text: string }[];
	details: FailureDetails;
	isError: true;
	terminate?: true;
}

/** Pi 0.87: the data of failures thrown in this process, by tool call id (most recent `THROWN_KEPT`). */
const thrown = new Map<string, FailureDetails>();
const THROWN_KEPT = 256;

/** The data of the failure thrown for `callId` in this process (Pi 0.87), if it is still kept. */
export function thrownFailure(callId: string | undefined): FailureDetails | undefined {
	return callId === undefined ? undefined : thrown.get(callId);
}

/**
 * The result of a failed call: `text` is what the model reads (the `CODE: message` form, or the tool's own text),
 * `fields` the structured facts beside the code. On Pi 0.87 it throws `text` instead (see the file header), except
 * for a failure that must end the turn (`terminate`): that one is returned on both, as only a returned result can
 * carry Pi's `terminate`.
 */
export function failed(code: ToolErrorCode, text: string, fields: Record<string, unknown> = {}, terminate = false, callId?: string): FailedResult {
	const details: FailureDetails = { ...fields, errorCode: code };
	if (!FAILURES_AS_DATA && !terminate) {
		if (callId !== undefined) {
			thrown.delete(callId);
			thrown.set(callId, details);
			if (thrown.size > THROWN_KEPT) thrown.delete(thrown.keys().next().value as string);
		}
		throw new Error(text);
	}
	const out: FailedResult = { content: [{ type: "text", text }], details, isError: true };
	if (terminate) out.terminate = true;
	return out;
}

/** `failed` with the `CODE: message` text every host tool, shell session and code cell failure reads as. */
export function failedWith(code: ToolErrorCode, message: string, fields: Record<string, unknown> = {}, terminate = false, callId?: string): FailedResult {
	return failed(code, `${code}: ${message}`, fields, terminate, callId);
}

/** A failure raised deep in a call that the tool's execute turns into its result (`failed`). */
export class ToolFailure extends Error {
	readonly code: ToolErrorCode;
	readonly fields: Record<string, unknown>;
	constructor(code: ToolErrorCode, message: string, fields: Record<string, unknown> = {}) {
		super(`${code}: ${message}`);
		this.code = code;
		this.fields = fields;
	}

	/** The result for Pi of call `callId` (thrown on 0.87). */
	result(callId?: string): FailedResult {
		return failed(this.code, this.message, this.fields, false, callId);
	}
}
