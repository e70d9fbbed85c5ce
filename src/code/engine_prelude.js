// The cell prelude: evaluated once per fresh context before the program. It receives the two host functions
// (emit, call) as arguments, installs the cell globals and returns the private harness object. Nothing of the
// harness stays reachable from the program's global scope.
(function (emit, call, declared) {
	"use strict";
	const g = globalThis;
	const jsonStringify = JSON.stringify;
	const jsonParse = JSON.parse;
	const PromiseCtor = Promise;
	const MapCtor = Map;
	const ErrorCtor = Error;
	const StringCtor = String;

	function fmtErr(e) {
		if (e !== null && typeof e === "object" && "message" in e) {
			let s;
			try {
				s = StringCtor(e.name === undefined ? "Error" : e.name) + ": " + StringCtor(e.message);
				if (typeof e.code === "string") s += " [" + e.code + "]";
				if (typeof e.stack === "string" && e.stack.length > 0) {
					// Frames of this prelude are noise for the model.
					const frames = e.stack.split("\n").filter((l) => l.length > 0 && l.indexOf("cell-prelude") < 0 && l.indexOf("at <eval> (cell:") < 0);
					if (frames.length > 0) s += "\n" + frames.join("\n");
				}
			} catch (_) {
				s = "Error: (the thrown error could not be formatted)";
			}
			return s;
		}
		return "Uncaught " + fmt(e);
	}

	function fmt(v) {
		if (typeof v === "string") return v;
		if (v === undefined) return "undefined";
		if (typeof v === "function" || typeof v === "symbol" || typeof v === "bigint") {
			try { return StringCtor(v); } catch (_) { return typeof v; }
		}
		if (v instanceof ErrorCtor) return fmtErr(v);
		try {
			const j = jsonStringify(v);
			if (j !== undefined) return j;
		} catch (_) {}
		try { return StringCtor(v); } catch (_) { return "[unprintable]"; }
	}

	// Text crosses to the host as well-formed UTF-16 (a lone surrogate becomes U+FFFD, as in the output of any
	// other tool) and in bounded chunks: a 100 MB string is never copied whole, so printing it is cut like other
	// output (the unread buffer keeps 256 KiB, the recovery file the rest) instead of failing the cell.
	const CHUNK = 65536;
	function wellFormed(s) {
		return s.toWellFormed();
	}
	// print/console always write whole lines: after text() left a partial line, they start a new one.
	let atLineStart = true;
	function out(s) {
		if (s.length === 0) return;
		let i = 0;
		while (i < s.length) {
			let end = Math.min(i + CHUNK, s.length);
			// Never split a surrogate pair between two chunks.
			const last = s.charCodeAt(end - 1);
			if (end < s.length && end - i > 1 && last >= 0xd800 && last <= 0xdbff) end--;
			emit(wellFormed(s.slice(i, end)));
			i = end;
		}
		atLineStart = s.charCodeAt(s.length - 1) === 10;
	}
	function line(args) {
		const parts = [];
		let total = 0;
		for (let i = 0; i < args.length; i++) {
			const p = fmt(args[i]);
			parts.push(p);
			total += p.length;
		}
		// The usual short line crosses once; a huge one is streamed part by part (never joined into a copy).
		if (total <= CHUNK) {
			out((atLineStart ? "" : "\n") + parts.join(" ") + "\n");
			return;
		}
		if (!atLineStart) out("\n");
		for (let i = 0; i < parts.length; i++) {
			if (i > 0) out(" ");
			out(parts[i]);
		}
		out("\n");
	}

	const hidden = (name, value) => Object.defineProperty(g, name, { value, writable: true, configurable: true, enumerable: false });
	hidden("print", function print(...args) { line(args); });
	hidden("text", function text(value) { out(fmt(value)); });
	hidden("console", Object.freeze({
		log(...args) { line(args); },
		warn(...args) { line(args); },
		error(...args) { line(args); },
	}));

	const pending = new MapCtor();
	function toolError(code, message) {
		const e = new ErrorCtor(message);
		e.code = code;
		return e;
	}
	function invoke(name, args) {
		let json;
		try {
			json = jsonStringify(args === undefined ? {} : args);
		} catch (e) {
			return PromiseCtor.reject(toolError("invalid-arguments", "Arguments of tools." + name + " could not be serialized as JSON: " + fmt(e && e.message)));
		}
		if (json === undefined) json = "null";
		const answer = jsonParse(call(name, json));
		if (answer.error) return PromiseCtor.reject(toolError(answer.error.code, answer.error.message));
		return new PromiseCtor((resolve, reject) => { pending.set(answer.id, { resolve, reject }); });
	}
	const declaredList = Object.freeze(declared.slice());
	hidden("tools", new Proxy({}, {
		get(_t, key) {
			if (typeof key !== "string" || key === "then") return undefined;
			return function (args) { return invoke(key, args); };
		},
		has(_t, key) { return declaredList.includes(key); },
		ownKeys() { return declaredList.slice(); },
		getOwnPropertyDescriptor(_t, key) {
			if (!declaredList.includes(key)) return undefined;
			return { value: function (args) { return invoke(key, args); }, writable: false, enumerable: true, configurable: true };
		},
		set() { return false; },
		defineProperty() { return false; },
		deleteProperty() { return false; },
	}));

	return {
		settle(p) {
			return p.then(
				(v) => ({ ok: true, result: v === undefined ? undefined : wellFormed(fmt(v)) }),
				(e) => ({ ok: false, error: wellFormed(fmtErr(e)) }),
			);
		},
		// Nested calls sent but not yet answered: the cell keeps running reactions chained on them after the
		// body returned (completion waits for tracked calls, docs/spec/toolkit.md §7).
		pending() {
			return pending.size;
		},
		deliver(id, ok, payload) {
			const p = pending.get(id);
			if (!p) return;
			pending.delete(id);
			if (ok) p.resolve(jsonParse(payload));
			else {
				const err = jsonParse(payload);
				const e = toolError(err.code, err.message);
				if (typeof err.sessionId === "string") e.sessionId = err.sessionId;
				if (typeof err.recoveryPath === "string") e.recoveryPath = err.recoveryPath;
				p.reject(e);
			}
		},
	};
})
