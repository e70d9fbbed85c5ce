//! Definition files (docs/agents.md "Definitions"): `<agentDir>/agents/*.md` (user scope) and
//! `<project>/.pi/agents/*.md` (project scope), each Markdown with a front matter block between `---` lines.
//!
//! Why a small hand-written reader instead of a YAML crate: the front matter has five keys whose values are a
//! scalar or a list of tool names; a full YAML parser (anchors, tags, multi-document streams) would accept far more
//! than a definition may say and is not in the dependency tree. Anything outside the subset is a warning that names
//! the file and line, never a guess.

use std::path::{Path, PathBuf};

/// A definition file larger than this is skipped with a warning (a definition is a prompt, not a document).
pub const MAX_FILE_BYTES: u64 = 64 * 1024;
/// At most this many definitions are read per folder; the rest are skipped with one warning.
pub const MAX_PER_DIR: usize = 64;
/// Longest agent name.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Where a definition came from. Project definitions arrive with a cloned repository and never raise permissions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// `<agentDir>/agents/`.
    User,
    /// `<project>/.pi/agents/`.
    Project,
}

impl Scope {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// The `permission` key: which permission mode the delegate's calls are decided under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permission {
    /// The parent session's effective mode (the default).
    Inherit,
    /// Confirm edits and commands.
    Ask,
    /// Edits inside the roots allowed, commands confirmed.
    AcceptEdits,
    /// Everything allowed.
    Auto,
}

impl Permission {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Inherit => "inherit",
            Permission::Ask => "ask",
            Permission::AcceptEdits => "accept-edits",
            Permission::Auto => "auto",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "inherit" => Some(Permission::Inherit),
            "ask" => Some(Permission::Ask),
            "accept-edits" => Some(Permission::AcceptEdits),
            "auto" => Some(Permission::Auto),
            _ => None,
        }
    }
}

/// The `tools` key as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolSpec {
    /// No `tools` key: Read, Glob, Grep.
    Default,
    /// `tools: "*"`: every work tool.
    All,
    /// A list (a comma-separated scalar or a YAML list); may contain `inherit`.
    List(Vec<String>),
}

/// One parsed definition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    pub description: String,
    pub tools: ToolSpec,
    /// `provider/id` or a model id, passed to the delegate's Pi as its model.
    pub model: Option<String>,
    pub permission: Permission,
    pub scope: Scope,
    pub path: PathBuf,
    /// The Markdown after the front matter: the delegate's system prompt.
    pub prompt: String,
}

/// Every definition of a session, with the warnings met while reading them.
#[derive(Clone, Debug, Default)]
pub struct Loaded {
    pub definitions: Vec<Definition>,
    pub warnings: Vec<String>,
}

/// A value of the front matter.
enum Value {
    Scalar(String),
    List(Vec<String>),
}

fn unquote(s: &str) -> String {
    let t = s.trim();
    if t.len() >= 2 && ((t.starts_with('"') && t.ends_with('"')) || (t.starts_with('\'') && t.ends_with('\''))) {
        return t[1..t.len() - 1].to_string();
    }
    t.to_string()
}

/// Cuts a `# comment` that follows whitespace outside quotes.
fn strip_comment(s: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev_space = true;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == '#' && prev_space => return s[..i].trim_end(),
            None => {}
        }
        prev_space = c.is_whitespace();
    }
    s
}

fn flow_list(s: &str) -> Vec<String> {
    s.split(',').map(unquote).filter(|x| !x.is_empty()).collect()
}

/// Splits a file into its front matter pairs and body. `Err` = the file is not a definition (the message says why).
fn front_matter(text: &str, warn: &mut dyn FnMut(String)) -> Result<(Vec<(String, Value)>, String), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    match lines.next() {
        Some(l) if l.trim_end() == "---" => {}
        _ => return Err("it does not start with a `---` front matter line".into()),
    }
    let mut pairs: Vec<(String, Value)> = Vec::new();
    let mut consumed = text.split_inclusive('\n').next().map_or(0, str::len);
    let mut closed = false;
    for (n, raw) in lines.enumerate() {
        consumed += raw.len();
        let line_no = n + 2;
        let line = raw.trim_end_matches(['\n', '\r']);
        if line.trim_end() == "---" {
            closed = true;
            break;
        }
        let content = strip_comment(line);
        if content.trim().is_empty() {
            continue;
        }
        if let Some(item) = content.trim_start().strip_prefix("- ").or_else(|| {
            let t = content.trim();
            (t == "-").then_some("")
        }) {
            match pairs.last_mut() {
                Some((_, Value::List(items))) => {
                    let v = unquote(item);
                    if !v.is_empty() {
                        items.push(v);
                    }
                }
                _ => warn(format!("line {line_no}: a list item outside a list key was ignored")),
            }
            continue;
        }
        if content.starts_with([' ', '\t']) {
            warn(format!(
                "line {line_no}: nested values are not supported and were ignored"
            ));
            continue;
        }
        let Some((key, value)) = content.split_once(':') else {
            warn(format!("line {line_no}: expected `key: value`; the line was ignored"));
            continue;
        };
        let key = key.trim().to_string();
        let value = value.trim();
        let v = if value.is_empty() {
            Value::List(Vec::new())
        } else if value.starts_with('[') && value.ends_with(']') {
            Value::List(flow_list(&value[1..value.len() - 1]))
        } else {
            Value::Scalar(unquote(value))
        };
        if pairs.iter().any(|(k, _)| *k == key) {
            warn(format!("line {line_no}: `{key}` is given twice; the first one counts"));
            continue;
        }
        pairs.push((key, v));
    }
    if !closed {
        return Err("its front matter has no closing `---` line".into());
    }
    Ok((pairs, text[consumed.min(text.len())..].trim().to_string()))
}

/// Whether `name` is an agent name: 1..64 of letters, digits, `-`, `_`, `.`, starting with a letter or digit.
pub fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && name.chars().count() <= MAX_NAME_CHARS
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Parses one definition file's text. `None` = not usable (the warnings say why); warnings carry no file name.
pub fn parse(text: &str, scope: Scope, path: &Path, warnings: &mut Vec<String>) -> Option<Definition> {
    let mut warn = |m: String| warnings.push(m);
    let (pairs, prompt) = match front_matter(text, &mut warn) {
        Ok(p) => p,
        Err(why) => {
            warn(format!("skipped: {why}"));
            return None;
        }
    };
    let (mut name, mut description, mut tools, mut model, mut permission) =
        (None, None, ToolSpec::Default, None, Permission::Inherit);
    for (key, value) in pairs {
        match (key.as_str(), value) {
            ("name", Value::Scalar(s)) => name = Some(s),
            ("description", Value::Scalar(s)) => description = Some(s),
            ("model", Value::Scalar(s)) if !s.is_empty() => model = Some(s),
            ("tools", Value::Scalar(s)) if s.trim() == "*" => tools = ToolSpec::All,
            ("tools", Value::Scalar(s)) => tools = ToolSpec::List(flow_list(&s)),
            ("tools", Value::List(items)) if items.len() == 1 && items[0] == "*" => tools = ToolSpec::All,
            ("tools", Value::List(items)) => tools = ToolSpec::List(items),
            ("permission", Value::Scalar(s)) => match Permission::parse(s.trim()) {
                Some(p) => permission = p,
                None => warn("`permission` must be one of inherit, ask, accept-edits, auto; inherit is used".into()),
            },
            (k @ ("name" | "description" | "model" | "permission"), Value::List(_)) => {
                warn(format!("`{k}` must be a single value; it was ignored"))
            }
            (k, _) => warn(format!("unknown key `{k}` was ignored")),
        }
    }
    let Some(name) = name.filter(|n| !n.is_empty()) else {
        warn("skipped: the front matter has no `name`".into());
        return None;
    };
    if !valid_name(&name) {
        warn(format!(
            "skipped: the name must be 1..{MAX_NAME_CHARS} letters, digits, `-`, `_` or `.`, starting with a letter \
             or digit"
        ));
        return None;
    }
    let Some(description) = description.filter(|d| !d.trim().is_empty()) else {
        warn(format!("skipped `{name}`: the front matter has no `description`"));
        return None;
    };
    let description = if description.chars().count() > MAX_DESCRIPTION_CHARS {
        warn(format!(
            "`{name}`: the description was cut to {MAX_DESCRIPTION_CHARS} characters"
        ));
        description.chars().take(MAX_DESCRIPTION_CHARS).collect()
    } else {
        description
    };
    // The description reaches `/pct agents` and every run's system prompt, one line each: a control character a
    // (project) file carries is shown as a visible escape, never passed on (docs/permissions.md "What reaches the
    // terminal"); so is the model name.
    let description = crate::display::line(&description).into_owned();
    let model = model.map(|m| crate::display::line(&m).into_owned());
    if scope == Scope::Project && permission != Permission::Inherit {
        warn(format!(
            "`{name}`: a project definition cannot set `permission` (a cloned repository never raises permissions); \
             `{}` was dropped and the delegate inherits the session's mode",
            permission.as_str()
        ));
        permission = Permission::Inherit;
    }
    Some(Definition {
        name,
        description,
        tools,
        model,
        permission,
        scope,
        path: path.to_path_buf(),
        prompt,
    })
}

/// Reads the `*.md` files of one folder, sorted by file name. A missing folder is no definitions and no warning.
fn load_dir(dir: &Path, scope: Scope, out: &mut Loaded) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    if files.len() > MAX_PER_DIR {
        out.warnings.push(format!(
            "{}: only the first {MAX_PER_DIR} of {} definitions were read",
            dir.display(),
            files.len()
        ));
        files.truncate(MAX_PER_DIR);
    }
    for path in files {
        let shown = path.display().to_string();
        let meta = match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => m,
            _ => continue,
        };
        if meta.len() > MAX_FILE_BYTES {
            out.warnings
                .push(format!("{shown}: skipped: larger than {MAX_FILE_BYTES} bytes"));
            continue;
        }
        let text = match std::fs::read(&path).map(String::from_utf8) {
            Ok(Ok(t)) => t,
            Ok(Err(_)) => {
                out.warnings.push(format!("{shown}: skipped: not UTF-8 text"));
                continue;
            }
            Err(e) => {
                out.warnings.push(format!("{shown}: skipped: {e}"));
                continue;
            }
        };
        let mut w = Vec::new();
        let def = parse(&text, scope, &path, &mut w);
        out.warnings.extend(w.into_iter().map(|m| format!("{shown}: {m}")));
        let Some(def) = def else { continue };
        if let Some(first) = out.definitions.iter().find(|d| d.name == def.name) {
            out.warnings.push(format!(
                "{shown}: skipped: `{}` is already defined by {} ({} scope wins)",
                def.name,
                first.path.display(),
                first.scope.as_str()
            ));
            continue;
        }
        out.definitions.push(def);
    }
}

/// Every definition of a session: the user's folder first (its names win), then the project's.
pub fn load(agent_dir: &Path, project_dir: Option<&Path>) -> Loaded {
    let mut out = Loaded::default();
    load_dir(&agent_dir.join("agents"), Scope::User, &mut out);
    if let Some(p) = project_dir {
        load_dir(&p.join(".pi").join("agents"), Scope::Project, &mut out);
    }
    out
}
