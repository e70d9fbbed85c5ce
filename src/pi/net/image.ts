/**
 * Image Generation glue (docs/net.md §Image Generation): the `openai_generate_image {prompt, size?, quality?}` tool.
 * The route (current model's official route, else an openai-codex OAuth model, else an openai API-key model) is
 * decided in Rust (src/net/plan.rs); request validation, the PNG check and the exclusive write under
 * `<agentDir>/artifacts/pi-codex-toolkit/<uuid>.png` are src/net/image.rs. This file resolves the credential through
 * Pi right before sending (route.ts), POSTs once (http.ts: no redirects, no retries, 300 s), and returns the path
 * and an image content block.
 */
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";
import type { ToolkitHost } from "../host.ts";
import { native } from "../native.ts";
import { toJson } from "../rules.ts";
import { debugLine, fail, postJson, type DebugInfo } from "./http.ts";
import { chatgptAccountId, prepareRequest } from "./route.ts";
import { netPlan } from "./websearch.ts";
import { auditCall, permissionGate } from "../permission.ts";
import { hostRuntime } from "../tools/host.ts";

export const IMAGE_TOOL = "openai_generate_image";

const PARAMETERS = Type.Object(
	{
		prompt: Type.String({ description: "What the image should show." }),
		size: Type.Optional(Type.String({ description: 'Image size: "auto" (default) or "<width>x<height>", e.g. "1024x1024".' })),
		quality: Type.Optional(Type.Union([Type.Literal("auto"), Type.Literal("low"), Type.Literal("medium"), Type.Literal("high")], { description: "Quality (default auto)." })),
	},
	{ additionalProperties: false },
);

export function register(host: ToolkitHost): void {
	host.pi.registerTool({
		name: IMAGE_TOOL,
		label: "OpenAI Image Generation",
		description:
			"Generate a PNG image with OpenAI image generation (gpt-image-2) and save it under the agent directory. " +
			"The prompt is sent to OpenAI as a separate, billed request. Returns the file path and the image.",
		promptSnippet: "Generate an image (OpenAI gpt-image-2; saved as a PNG file; separate billed request)",
		parameters: PARAMETERS,
		async execute(toolCallId: string, params: Record<string, unknown>, signal: AbortSignal | undefined, _onUpdate: unknown, ctx: ExtensionContext) {
			const plan = netPlan(host)?.image;
			if (!host.isAdmitted(IMAGE_TOOL) || !plan?.route) {
				fail(`Image Generation is not enabled${plan?.reason ? ` (${plan.reason})` : ""}: turn it on with /pct config, and see /pct status for why it is unavailable.`);
			}
			const req = native.netImageRequest(toJson<Record<string, unknown>>(params ?? {}));
			if (!req.ok) fail(req.error!.message);
			// High risk (docs/permissions.md "Image Generation"): a billed request that writes a file, decided like an
			// edit — a card in ask, refused in Plan whatever the mode — and audited like every decided call.
			const t0 = performance.now();
			const rt = hostRuntime(host);
			try {
				rt.for(ctx);
			} catch {
				// A cwd that is not a directory: the decision and the audit line still work (bound to the session id).
			}
			const prompt = typeof params?.prompt === "string" ? params.prompt : "";
			const gate = await permissionGate(host, rt, ctx, {
				tool: IMAGE_TOOL,
				risk: "edit",
				signal,
				title: `Allow ${IMAGE_TOOL} to generate an image? (a separate, billed request to OpenAI; the PNG is saved under the agent dir)\nprompt: ${prompt}`,
			});
			if (!gate.ok) {
				await auditCall(host, rt, { toolCallId, tool: IMAGE_TOOL, args: params ?? {}, gate, runMs: 0, totalMs: performance.now() - t0, ok: false, errorCode: gate.code });
				fail(`${gate.code}: ${gate.message}`);
			}
			const route = plan.route;
			const generate = async () => {
				const registry = ctx.modelRegistry;
				const model = registry?.find?.(route.kind, route.model);
				if (!model) fail(`missing-openai-auth: ${route.kind}/${route.model} is no longer in Pi's model registry; run /pct status.`);
				const prep = await prepareRequest(registry, model);
				if ("code" in prep) fail(prep.message);
				const headers: Record<string, string> = { ...prep.headers, authorization: `Bearer ${prep.apiKey}` };
				if (prep.route.kind === "openai-codex") {
					const account = chatgptAccountId(prep.apiKey);
					if (!account) fail("credential-mismatch: the ChatGPT login carries no chatgpt_account_id; log in again with /login.");
					headers["chatgpt-account-id"] = account;
					headers.originator = "pi";
				}
				const debug: DebugInfo = { enabled: host.config().debug, feature: "image-generation", provider: model.provider, api: model.api, model: "gpt-image-2" };
				const started = performance.now();
				const r = await postJson(prep.route.imagesUrl, headers, req.body!, "image", signal, debug);
				if (!r.ok) fail(r.error.message);
				const saved = await native.netImageSave(r.text, host.agentDir);
				debugLine(debug, prep.route.imagesUrl, started, r.status, r.requestId, saved.ok ? ["image"] : [], saved.ok ? undefined : saved.error!.code);
				if (!saved.ok) fail(saved.error!.message);
				return {
					content: [
						{ type: "text" as const, text: `Image saved to ${saved.path}` },
						{ type: "image" as const, data: saved.base64!, mimeType: "image/png" },
					],
					details: { path: saved.path!, mimeType: "image/png" },
				};
			};
			const r0 = performance.now();
			let failed: string | undefined = "TOOL_FAILED";
			try {
				const out = await generate();
				failed = undefined;
				return out;
			} catch (e) {
				failed = /^([a-z]+(?:-[a-z]+)+|[A-Z_]+):/.exec(e instanceof Error ? e.message : "")?.[1] ?? "TOOL_FAILED";
				throw e;
			} finally {
				await auditCall(host, rt, { toolCallId, tool: IMAGE_TOOL, args: params ?? {}, gate, runMs: performance.now() - r0, totalMs: performance.now() - t0, ok: failed === undefined, errorCode: failed });
			}
		},
	});
}
