//! One way to declare a module's stable error codes (docs/napi.md "Failures"): each code is an enum variant with the
//! word the model sees and the code-level next step, so a module's failures carry a type instead of a string, and
//! every module gets the same `ALL`, `as_str`, `next_step` and `parse`. The tests below give each module the same
//! two checks: its doc table lists `ALL` in order, and index.d.ts's literal union is `ALL` (plus binding extras).

/// Declares a `Copy` enum of stable codes. Each variant is written `Variant = "word" => "next step",` after its doc
/// comment; the macro adds `ALL` (declaration order, which is the doc table's order), `as_str`, `next_step`,
/// `parse`, `Display`, and `==` against the word (tests and the boundary compare words).
macro_rules! error_codes {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[doc = $doc:literal])* $variant:ident = $word:literal => $next:expr, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[doc = $doc])* $variant, )+
        }

        #[allow(dead_code)]
        impl $name {
            /// Every code, in declaration order (the order of the module's doc table).
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];

            /// The word the model, the glue and the audit log see.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The code-level next step (messages also name their own, specific one).
            pub fn next_step(self) -> &'static str {
                match self {
                    $($name::$variant => $next,)+
                }
            }

            /// Looks a code up by its word (codes cross the napi boundary and the audit log as text).
            pub fn parse(word: &str) -> Option<Self> {
                Self::ALL.into_iter().find(|c| c.as_str() == word)
            }
        }

        // A duplicated word or an empty next step is a compile error, so no module needs its own loop for it.
        const _: () = $crate::codes::check_words(&[$($word),+], &[$($next),+]);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// Tests (here and in other modules) assert the exact word the model sees.
        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        /// The word as the boundary carries it (a binding's `String`) against the typed code.
        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                self == other.as_str()
            }
        }
    };
}

pub(crate) use error_codes;

/// Compile-time rules every code enum obeys (run by [`error_codes!`] in a `const`): the words are unique, so
/// `parse` finds exactly the code that produced a word, and every next step says something.
pub const fn check_words(words: &[&str], steps: &[&str]) {
    let mut i = 0;
    while i < words.len() {
        assert!(!words[i].is_empty(), "an error code has an empty word");
        assert!(!steps[i].is_empty(), "an error code has an empty next step");
        let mut j = i + 1;
        while j < words.len() {
            assert!(!same(words[i], words[j]), "two error codes share a word");
            j += 1;
        }
        i += 1;
    }
}

/// `a == b` in a `const` context (`str` equality is not const yet).
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The checks every code enum runs against its docs and against index.d.ts.
#[cfg(test)]
pub mod check {
    /// The first backticked word of each row of the table that follows `heading` (a whole line, e.g.
    /// `"### Codes"`) in `doc`, in order.
    pub fn doc_table<'a>(doc: &'a str, heading: &str) -> Vec<&'a str> {
        let after = doc
            .split(&format!("\n{heading}\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("the doc has no `{heading}` section"));
        after
            .lines()
            .skip_while(|l| !l.starts_with("| `"))
            .take_while(|l| l.starts_with("| `"))
            .filter_map(|l| l.split('`').nth(1))
            .collect()
    }

    /// The words of the literal union of `field` in index.d.ts's `export interface iface`.
    pub fn dts_union(dts: &str, iface: &str, field: &str) -> Vec<String> {
        let body = dts
            .split(&format!("export interface {iface} {{\n"))
            .nth(1)
            .unwrap_or_else(|| panic!("index.d.ts has no interface {iface}"));
        let body = body.split("\n}").next().unwrap_or(body);
        // A required (`field: `) or optional (`field?: `) field.
        let prefixes = [format!("{field}: "), format!("{field}?: ")];
        let (line, prefix) = body
            .lines()
            .map(str::trim)
            .find_map(|l| prefixes.iter().find(|p| l.starts_with(p.as_str())).map(|p| (l, p)))
            .unwrap_or_else(|| panic!("{iface} has no field {field}"));
        line.trim_start_matches(prefix.as_str())
            .split(" | ")
            .map(|w| w.trim_matches('\'').to_string())
            .collect()
    }

    /// `words` followed by `extra`, as owned strings (the shape `dts_union` returns).
    pub fn with_extra<'a>(words: impl IntoIterator<Item = &'a str>, extra: &[&'a str]) -> Vec<String> {
        words
            .into_iter()
            .chain(extra.iter().copied())
            .map(str::to_string)
            .collect()
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        error_codes! {
            /// A two-code enum to test the macro itself.
            enum Sample {
                /// The first.
                First = "first-code" => "do the first thing",
                /// The second.
                Second = "second-code" => "do the second thing",
            }
        }

        #[test]
        fn the_macro_gives_all_words_steps_and_parse() {
            assert_eq!(Sample::ALL, [Sample::First, Sample::Second]);
            assert_eq!(Sample::Second.as_str(), "second-code");
            assert_eq!(Sample::First.next_step(), "do the first thing");
            assert_eq!(Sample::parse("second-code"), Some(Sample::Second));
            assert_eq!(Sample::parse("third-code"), None);
            assert_eq!(Sample::First.to_string(), "first-code");
            assert!(Sample::First == "first-code");
        }

        #[test]
        fn the_compile_time_rules_refuse_a_shared_word_and_an_empty_step() {
            super::super::check_words(&["a", "b"], &["x", "y"]);
            let shared = std::panic::catch_unwind(|| super::super::check_words(&["a", "a"], &["x", "y"]));
            assert!(shared.is_err());
            let empty = std::panic::catch_unwind(|| super::super::check_words(&["a"], &[""]));
            assert!(empty.is_err());
            assert!(
                super::super::same("ab", "ab") && !super::super::same("ab", "abc") && !super::super::same("ab", "ac")
            );
        }

        #[test]
        fn doc_table_and_dts_union_read_their_sources() {
            let doc = "intro\n### Codes\n\n| code | step |\n|---|---|\n| `a-b` | x |\n| `c` | y |\n\nmore | `z` |\n";
            assert_eq!(doc_table(doc, "### Codes"), ["a-b", "c"]);
            let dts = "export interface F {\n  ok: false\n  code: 'a-b' | 'c' | 'internal-panic'\n}\n\
                       export interface G {\n  code: 'x'\n}\n";
            assert_eq!(
                dts_union(dts, "F", "code"),
                with_extra(["a-b", "c"], &["internal-panic"])
            );
            assert_eq!(dts_union(dts, "G", "code"), ["x"]);
            let optional = "export interface H {\n  code?: 'y' | 'z'\n}\n";
            assert_eq!(dts_union(optional, "H", "code"), ["y", "z"]);
        }
    }
}
