//! Secret redaction for the audit log (docs/host.md "Audit"). The arguments of a host tool call are the model's
//! free text — shell commands, patches, file contents, URLs — so secret-named object keys are not enough: a
//! `GITHUB_TOKEN=…` inside a Bash command or a `Bearer …` header inside a curl line must not reach a file that
//! outlives the session. Each rule names the part of a match that is the secret, and only that part becomes
//! `[REDACTED]`, so the line stays readable (`curl -H 'Authorization: Bearer [REDACTED]' …`). Rules are regular
//! expressions (the `regex` crate: linear time, no backtracking, so hostile input cannot stall an audit append).

use regex::{Captures, Regex};
use std::sync::LazyLock;

/// What replaces a redacted value.
pub const REDACTED: &str = "[REDACTED]";
/// A value holding this was redacted by an earlier rule (a later rule may see it cut short, `[REDACTED`).
const MARK: &str = "[REDACTED";

/// Words that make a key secret wherever they stand in it (`db_password_hash`, `clientSecret`).
const STRONG_WORDS: &[&str] = &[
    "secret",
    "secrets",
    "password",
    "passwords",
    "passwd",
    "passphrase",
    "pwd",
    "credential",
    "credentials",
    "cookie",
    "cookies",
    "authorization",
    "apikey",
    "privatekey",
    "secretkey",
    "accesskey",
];

/// Words that make a key secret when they end it (`GITHUB_TOKEN`, `basic_auth`) but not elsewhere (`token_count`).
const LAST_WORDS: &[&str] = &["token", "auth", "pass", "pat", "dsn"];

/// Last words that make a name describe a secret instead of holding it (`password_reset_url`, `token_file`).
const NOT_THE_VALUE: &[&str] = &[
    "url", "uri", "length", "len", "min", "max", "policy", "hint", "label", "field", "prompt", "file", "path",
    "header", "name", "id", "count", "type", "expiry", "expires", "enabled", "required", "env", "var", "reset",
    "regex", "pattern", "format", "rules", "dir",
];

/// Words before a final `key` that make it a secret (`api_key`, `AWS_SECRET_ACCESS_KEY`; not `primary_key`).
const KEY_QUALIFIERS: &[&str] = &[
    "api",
    "private",
    "secret",
    "access",
    "signing",
    "client",
    "encryption",
    "master",
    "session",
    "account",
    "service",
    "auth",
    "app",
    "webhook",
    "license",
];

/// The key's words, lower-cased: split at anything not a letter or digit and at lower-to-upper case changes
/// (`xAuthToken` → `x`, `auth`, `token`).
fn words(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for c in key.chars() {
        if !c.is_alphanumeric() {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        cur.extend(c.to_lowercase());
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Whether an object key or a `NAME=` names a secret: a strong word anywhere (`password`, `secret`, `cookie`,
/// `credentials`, `passphrase`, `pwd`, `authorization`, `apiKey`, `privateKey`; also inside a word: `PGPASSWORD`),
/// `token`/`auth`/`pass` at the end
/// (`x-auth-token`, `GITHUB_TOKEN`, `basic_auth`), or `key` after a qualifier (`api_key`, `AWS_SECRET_ACCESS_KEY`,
/// `signing-key`). Case, `-`, `_`, `.` and camelCase are all word breaks. `max_tokens`, `token_count`, `sort_key`
/// and `monkey` are not secrets.
pub fn secret_key(key: &str) -> bool {
    let w = words(key);
    // A name about a secret rather than holding one: `password_reset_url`, `password_min_length`, `apiKeyHeader`,
    // `token_file` (the path to it), `secret_name`.
    if w.len() > 1 && w.last().is_some_and(|l| NOT_THE_VALUE.contains(&l.as_str())) {
        return false;
    }
    let joined: String = w.concat();
    if w.iter().any(|x| STRONG_WORDS.contains(&x.as_str())) {
        return true;
    }
    if [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "credential",
        "apikey",
        "accesstoken",
        "authtoken",
        "refreshtoken",
        "privatekey",
        "accesskey",
    ]
    .iter()
    .any(|s| joined.contains(s))
    {
        return true;
    }
    // An environment-style name (`DEEPSEEK_KEY`, `VENDOR_API_SECRET`): upper case with underscores, ending in `_KEY`.
    // Lower-case `sort_key` and `primary_key` stay names of fields.
    if key.len() > 4
        && key.ends_with("_KEY")
        && key
            .bytes()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return true;
    }
    match w.as_slice() {
        [.., last] if LAST_WORDS.contains(&last.as_str()) => true,
        [.., q, last] if last == "key" && KEY_QUALIFIERS.contains(&q.as_str()) => true,
        _ => false,
    }
}

/// Whether a credential after `Bearer`/`Basic` looks machine-made rather than an English word: a digit, a
/// symbol of the token alphabets, or a capital letter after the first character.
fn looks_random(v: &str) -> bool {
    v.chars().any(|c| c.is_ascii_digit() || "+/=_.~-".contains(c)) || v.chars().skip(1).any(|c| c.is_ascii_uppercase())
}

/// Whether a value after `NAME=` is a reference to the secret rather than the secret itself (`$TOKEN`,
/// `${{ secrets.X }}`, `os.environ["X"]`, `getToken()`), or is already redacted or empty.
fn is_reference(v: &str) -> bool {
    // Single quotes keep `$` literal in a shell: `'$ecr3t'` is the secret itself; `'${X}'` and `'${{ x }}'` are
    // templates (Compose and CI files fill them in whatever the quotes).
    let single = v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'');
    let t = v.trim_matches(|c| c == '"' || c == '\'');
    t.is_empty()
        || t.contains(MARK)
        || (t.starts_with('$') && (!single || t.starts_with("${")))
        || t.starts_with('<')
        // A YAML block-scalar sign: the value is on the lines below (`redact_yaml_next_line`).
        || (t.len() <= 3 && (t.starts_with('|') || t.starts_with('>')) && t[1..].chars().all(|c| "+-0123456789".contains(c)))
        || t.contains("process.env")
        || t.contains("os.environ")
        || t.contains("getenv")
        || CALL.is_match(t)
        || matches!(
            t.to_ascii_lowercase().as_str(),
            "bearer" | "basic" | "token" | "digest" | "negotiate" | "null" | "none" | "true" | "false" | "undefined"
        )
}

/// A function call that yields the secret (`getPassword()`, `env("X")`, `secrets.get('x')`, `vault.read(path)`): a
/// name without digits, then parentheses around nothing, a quoted string or another name. `Tr0ub4dor(3)` and
/// `ab(cd` are values.
static CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^[A-Za-z_][A-Za-z_.]*\((?:|"[^"]*"|'[^']*'|[A-Za-z_][A-Za-z0-9_.]*)\)$"#)
        .expect("call pattern compiles")
});

/// One rule: where a secret is, which capture group is the secret, and a check on the captures (false keeps the
/// match as it is).
struct Rule {
    re: Regex,
    group: usize,
    check: fn(&Captures) -> bool,
}

fn rule(re: &str, group: usize, check: fn(&Captures) -> bool) -> Rule {
    Rule {
        re: Regex::new(re).expect("redaction rule compiles"),
        group,
        check,
    }
}

fn always(_: &Captures) -> bool {
    true
}

fn named_secret(c: &Captures) -> bool {
    secret_key(&c[1]) && !is_reference(&c[3])
}

/// The well-known token formats; the whole match is the secret.
const TOKEN_FORMATS: &[&str] = &[
    // OpenAI and Anthropic (`sk-proj-…`, `sk-ant-api03-…`) and every other `sk-` key.
    r"sk-[A-Za-z0-9_\-]{8,}",
    // GitHub: classic and fine-grained personal, OAuth, user-to-server, server-to-server, refresh tokens.
    r"gh[pousr]_[A-Za-z0-9]{30,}",
    r"github_pat_[A-Za-z0-9_]{22,}",
    // GitLab personal, runner, deploy, pipeline-trigger, feed, CI build, OAuth and incoming-mail tokens.
    r"gl(?:pat|rt|dt|ptt|ft|cbt|oas|imt|soat|ffct|agent)-[A-Za-z0-9_\-]{20,}",
    // Slack bot/user/app/refresh tokens and webhook paths.
    r"xox[abposre]-[A-Za-z0-9\-]{10,}",
    r"xapp-\d-[A-Za-z0-9\-]{10,}",
    r"hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
    // AWS access key ids (the secret key has no format; `NAME=` and key rules catch it).
    r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}",
    // Stripe secret, restricted and webhook-signing keys.
    r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
    r"whsec_[A-Za-z0-9]{20,}",
    // Google API keys, OAuth access tokens, OAuth client secrets.
    r"AIza[0-9A-Za-z_\-]{35}",
    r"ya29\.[0-9A-Za-z_\-]{20,}",
    r"GOCSPX-[A-Za-z0-9_\-]{20,}",
    // JSON Web Tokens (header.payload.signature, base64url).
    r"eyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*",
    // npm, Hugging Face, SendGrid, DigitalOcean, Shopify, PyPI, Docker Hub tokens.
    r"npm_[A-Za-z0-9]{36}",
    r"hf_[A-Za-z0-9]{30,}",
    r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}",
    r"do[por]_v1_[a-f0-9]{64}",
    r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}",
    r"pypi-[A-Za-z0-9_\-]{50,}",
    r"dckr_pat_[A-Za-z0-9_\-]{20,}",
];

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    let formats = format!(r"(?:^|[^A-Za-z0-9_\-])((?:{}))", TOKEN_FORMATS.join("|"));
    vec![
        // A PEM private key: the body between the markers.
        rule(
            r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----([\s\S]*?)-----END [A-Z0-9 ]*PRIVATE KEY-----",
            2,
            always,
        ),
        // Authorization headers, whatever the scheme: `Authorization: Bearer x`, `"authorization": "Basic x"`.
        rule(
            r#"(?i)\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?(?:(?:bearer|basic|token|digest|negotiate)\s+)?([^\s"',;]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        // `Bearer x` / `Basic x` anywhere else (curl -H, fetch headers, logs) when x looks machine-made.
        rule(r"(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/\-]{8,}=*)", 1, |c| {
            looks_random(&c[1]) && !is_reference(&c[1])
        }),
        // Cookie headers.
        rule(r#"(?i)\b(?:set-)?cookie\s*:\s*([^\r\n"']+)"#, 1, always),
        // Credentials in URLs: scheme://user:password@host.
        rule(r#"\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@'"]*:([^\s/@'"]+)@"#, 1, |c| {
            !is_reference(&c[1])
        }),
        // Password and token flags: --password x, --token=x, --api-key 'x', -u user:password.
        rule(
            r#"(?i)(?:^|[\s'"])--?(?:password|passwd|pass|pwd|passphrase|token|api-?key|secret|client-secret|access-token|auth-token|private-key|secret-key)(?:=|\s+)("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(r#"(?:^|\s)(?:-u|--user)(?:=|\s+)['"]?[^\s:'"]+:([^\s'"]+)"#, 1, |c| {
            !is_reference(&c[1])
        }),
        // The well-known token formats.
        rule(&formats, 1, always),
        // Password flags of clients that spell them `-p` (or another short letter): `mysql -pSECRET` (the MySQL
        // family takes the password glued to `-p`; `-p name` is a database), `sshpass -p X` / `-pX`, `docker login -p
        // X` (and podman, buildah, skopeo, helm, nerdctl, oras), `redis-cli -a X`, `mongo(sh) -p X`, `ldapsearch -w X`,
        // `zip -P X`, `7z -pX`, `openssl -pass pass:X`, `smbclient -U user%X`.
        rule(
            r#"\b(?:mysql|mariadb|mysqldump|mysqladmin|mysqlimport|mysqlshow|mysqlcheck|mysqlpump|mysqlsh)\b[^\n;|&]*?\s-p("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(
            r#"\bsshpass\b(?:\s+-[a-oq-zA-Z]\S*)*\s+-p\s*("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(
            r#"\b(?:docker|podman|buildah|skopeo|helm|nerdctl|oras|crane)\b(?:\s+registry)?\s+login\b[^\n;|&]*?\s-p(?:=|\s+)("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(r#"\bredis-cli\b[^\n;|&]*?\s-a\s+("[^"]*"|'[^']*'|[^\s'"]+)"#, 1, |c| {
            !is_reference(&c[1])
        }),
        rule(
            r#"\bmongo(?:sh|dump|restore|export|import)?\b[^\n;|&]*?\s-p\s+("[^"]*"|'[^']*'|[^\s'"-][^\s'"]*)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(
            r#"\bldap(?:search|add|modify|delete|passwd|whoami)\b[^\n;|&]*?\s-w\s+("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(
            r#"\b(?:zip|7z|7za|unrar|rar)\b[^\n;|&]*?\s-(?:P\s*|p)("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(r#"\s-pass(?:in|out)?\s+['"]?pass:([^\s'"]+)"#, 1, |c| {
            !is_reference(&c[1])
        }),
        rule(r#"\bsmbclient\b[^\n;|&]*?\s-U\s+['"]?[^\s%'"]+%([^\s'"]+)"#, 1, |c| {
            !is_reference(&c[1])
        }),
        // `name value` pairs: a netrc's `password X` (at a line start, or after `machine HOST [login USER]`), and a
        // client's `config set NAME VALUE` / `configure set NAME VALUE` when NAME is secret (`aws configure set
        // aws_secret_access_key X`, `npm config set _authToken X`, `yarn config set npmAuthToken X`).
        rule(
            r#"(?im)^[ \t]*(?:password|passwd)[ \t]+("[^"]*"|'[^']*'|[^\s'"]+)[ \t]*$"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(
            r#"(?i)\bmachine[ \t]+\S+(?:\s+login\s+\S+)?\s+password\s+("[^"]*"|'[^']*'|[^\s'"]+)"#,
            1,
            |c| !is_reference(&c[1]),
        ),
        rule(
            r#"\b(?:config|configure)\s+set\s+(?:--\S+\s+)*(\S+)\s+("[^"]*"|'[^']*'|[^\s'"]+)"#,
            2,
            |c| secret_key(c[1].rsplit(['.', ':', '/']).next().unwrap_or(&c[1])) && !is_reference(&c[2]),
        ),
        // NAME=value where NAME looks secret: environment assignments, .env and ini files, CLI key=value.
        rule(
            r#"\b([A-Za-z_][A-Za-z0-9_.\-]*)(\s*=\s*)("[^"]*"|'[^']*'|[^\s'"&;|,}\]]+)"#,
            3,
            named_secret,
        ),
        // "name": "value" and name: value where the name looks secret: JSON, YAML and headers inside free text.
        rule(
            r#"(?:^|[^A-Za-z0-9_{$])["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?([ \t]*:[ \t]*)("(?:[^"\\\n]|\\.)*"|'[^'\n]*'|[^\s,'"}\]]+)"#,
            3,
            named_secret,
        ),
    ]
});

/// A YAML key with nothing after its colon but an optional block-scalar sign (`password:`, `token: |`): its value
/// is on the lines below.
static YAML_KEY_ALONE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"^(\s*)(?:-\s+)?["']?([A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*:\s*([|>][-+0-9]*)?\s*$"#)
        .expect("yaml key compiles")
});

/// YAML whose secret value sits on the next line(s): `password:` then an indented scalar, or `key: |` then an
/// indented block. The value lines (more indented than the key) become `[REDACTED]`, keeping their indentation; a
/// nested mapping (`password:` then `  file: x`) or a list is left as it is.
fn redact_yaml_next_line(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains(':') || !s.contains('\n') {
        return std::borrow::Cow::Borrowed(s);
    }
    let lines: Vec<&str> = s.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut changed = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        out.push(line.to_string());
        i += 1;
        let Some(c) = YAML_KEY_ALONE.captures(line) else {
            continue;
        };
        if !secret_key(&c[2]) {
            continue;
        }
        let indent = c[1].len();
        let block = c.get(3).is_some();
        while i < lines.len() {
            let next = lines[i];
            let body = next.trim_start();
            let depth = next.len() - body.len();
            if body.is_empty() || depth <= indent {
                break;
            }
            // A plain scalar is one line, and neither a mapping nor a list; a block scalar takes every deeper line.
            if !block && (body.starts_with("- ") || YAML_MAPPING.is_match(body)) {
                break;
            }
            if !body.contains(MARK) && !is_reference(body.trim_end()) {
                out.push(format!("{}{REDACTED}", &next[..depth]));
                changed = true;
            } else {
                out.push(next.to_string());
            }
            i += 1;
            if !block {
                break;
            }
        }
    }
    if changed {
        std::borrow::Cow::Owned(out.join("\n"))
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// A YAML mapping line (`name: value` or `name:`).
static YAML_MAPPING: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^["']?[A-Za-z_][A-Za-z0-9_.\-]*["']?\s*:(?:\s|$)"#).expect("yaml mapping compiles"));

/// `s` with every secret the rules find replaced by `[REDACTED]` (the labels around it kept).
pub fn redact_text(s: &str) -> String {
    let mut cur: std::borrow::Cow<str> = std::borrow::Cow::Borrowed(s);
    for r in RULES.iter() {
        let mut out = String::new();
        let mut last = 0;
        for c in r.re.captures_iter(&cur) {
            let Some(m) = c.get(r.group) else { continue };
            if m.as_str().is_empty() || m.as_str().contains(MARK) || !(r.check)(&c) {
                continue;
            }
            out.push_str(&cur[last..m.start()]);
            out.push_str(REDACTED);
            last = m.end();
        }
        if last > 0 {
            out.push_str(&cur[last..]);
            cur = std::borrow::Cow::Owned(out);
        }
    }
    match redact_yaml_next_line(&cur) {
        std::borrow::Cow::Owned(o) => o,
        std::borrow::Cow::Borrowed(_) => cur.into_owned(),
    }
}

#[cfg(test)]
mod tests;
