import { native } from "./pi/native.ts";
export default function (pi: any) {
	pi.registerCommand("pct", { description: "x", handler: async (_args: string, ctx: any) => { ctx.ui.notify("engine " + native.engineVersion()); } });
}
