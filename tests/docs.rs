//! The docs describe what exists:
//!
//! - the README's configuration table documents every setting, by its environment variable;
//! - `docs/deploy.md`'s shell blocks are complete shell an operator can paste: each parses
//!   (`bash -n`), no `\` continuation runs into a comment, a blank line or the block's end, and
//!   every commented-out argument still parses when its `#` is deleted (optional arguments live in
//!   an array literal, where a commented element is just a missing one);
//! - every setting `docs/deploy.md` names — `FIRSTLINE_<SECTION>__<KEY>` variables and
//!   `section.key` names in its shell and TOML blocks and its inline code — is a real setting
//!   ([`Settings::keys`]), each TOML block loads with Firstline's own loader (unknown keys fail),
//!   also with its commented `key = …` lines uncommented;
//! - the Secret command names every key of the `firstline` Secret a manifest under `deploy/` reads.

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use firstline_config::Settings;
use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const DEPLOY_DOC: &str = include_str!("../docs/deploy.md");
const DEPLOY_DOC_NAME: &str = "docs/deploy.md";

/// Fence tags whose blocks are shell; `console` blocks are the lines after a `$ ` prompt.
const SHELL_TAGS: &[&str] = &["sh", "bash", "shell", "console"];
/// `FIRSTLINE_*` variables that are not settings (the loader's own).
const NOT_SETTINGS: &[&str] = &["FIRSTLINE_CONFIG"];
/// `name.ext` words that are files, not `section.key` settings (`bot.yaml`, `worker.rs`).
const FILE_EXTENSIONS: &[&str] = &[
    "crt", "json", "key", "md", "mjs", "pem", "rs", "sh", "toml", "txt", "yaml", "yml",
];

#[test]
fn every_setting_is_in_the_readme_table() {
    let readme = include_str!("../README.md");
    let missing: Vec<String> = Settings::keys()
        .into_iter()
        .filter(|(key, env)| !readme.contains(&format!("| `{key}` | `{env}` |")))
        .map(|(key, _)| key)
        .collect();
    assert!(
        missing.is_empty(),
        "settings missing from README.md's table: {missing:?}"
    );
}

#[test]
fn deploy_md_shell_blocks_are_complete_shell() {
    let shell = blocks(DEPLOY_DOC)
        .into_iter()
        .filter(Block::is_shell)
        .count();
    assert!(
        shell >= 5,
        "found only {shell} shell blocks in {DEPLOY_DOC_NAME}"
    );
    let problems = shell_problems(DEPLOY_DOC_NAME, DEPLOY_DOC);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn deploy_md_names_only_real_settings() {
    let checked = setting_names(DEPLOY_DOC);
    let variables = checked.iter().filter(|n| n.name.starts_with("FIRSTLINE_"));
    assert!(
        variables.count() > 0 && checked.iter().any(|n| n.name.contains('.')),
        "the check found no variables or no dotted settings to check: {checked:?}"
    );
    let problems = setting_problems(DEPLOY_DOC_NAME, DEPLOY_DOC);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn deploy_md_toml_blocks_load_as_settings() {
    let toml: Vec<Block> = blocks(DEPLOY_DOC)
        .into_iter()
        .filter(|b| b.tag == "toml")
        .collect();
    assert!(!toml.is_empty(), "no toml blocks in {DEPLOY_DOC_NAME}");
    let problems: Vec<String> = toml
        .iter()
        .flat_map(|block| toml_load_problems(DEPLOY_DOC_NAME, block))
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn deploy_md_secret_command_has_every_key_the_deployments_read() {
    let shell: String = blocks(DEPLOY_DOC)
        .into_iter()
        .filter(Block::is_shell)
        .map(|b| b.text)
        .collect();
    let refs = secret_key_refs(&root().join("deploy"), "firstline");
    assert!(
        refs.iter().any(|r| r.key == "database-url"),
        "no secretKeyRef to the firstline Secret found under deploy/: {refs:?}"
    );
    let mut problems = Vec::new();
    for reference in &refs {
        let argument = format!("--from-literal={}=", reference.key);
        let Some(line) = shell.lines().find(|l| l.contains(&argument)) else {
            problems.push(format!(
                "{}: {} reads Secret key `{}`, which {DEPLOY_DOC_NAME}'s Secret command lacks",
                reference.file, reference.variable, reference.key
            ));
            continue;
        };
        // A key every install's pods require must be on a live line, not a commented one.
        let everywhere = ["deploy/base/", "deploy/migrate/"]
            .iter()
            .any(|dir| reference.file.starts_with(dir));
        if everywhere && !reference.optional && line.trim_start().starts_with('#') {
            problems.push(format!(
                "{}: {} requires Secret key `{}` (not optional), which {DEPLOY_DOC_NAME} only has \
                 commented out",
                reference.file, reference.variable, reference.key
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_refuses_broken_shell_and_unknown_settings() {
    let doc = "\
# Example

```sh
kubectl create secret generic firstline -n firstline \\
  --from-literal=database-url='…' \\
  # --from-literal=temporal-api-key='…'
export FIRSTLINE_TEMPORAL__ADRESS=https://x:7233   # temporal.adress
```

Then set `llm.modle`.

```bash
if true; then
  echo unfinished
```

```toml
[temporal]
adress = \"https://x:7233\"
```
";
    let shell = shell_problems("example.md", doc);
    let reported = |at: &str, what: &str| {
        shell
            .iter()
            .any(|p| p.starts_with(&format!("example.md:{at} ")) && p.contains(what))
    };
    assert!(reported("6", "dangling continuation"), "{shell:#?}");
    assert!(reported("6", "commented-out argument"), "{shell:#?}");
    assert!(
        reported("13", "(block `if true; then`): bash -n"),
        "bash -n names the block by its line and first line: {shell:#?}"
    );
    let settings = setting_problems("example.md", doc).join("\n");
    for unknown in ["FIRSTLINE_TEMPORAL__ADRESS", "temporal.adress", "llm.modle"] {
        assert!(
            settings.contains(unknown),
            "{unknown} not reported: {settings}"
        );
    }
    assert!(
        !settings.contains("database-url"),
        "Secret keys are not settings: {settings}"
    );
    let toml = blocks(doc)
        .into_iter()
        .find(|b| b.tag == "toml")
        .expect("the toml block");
    let load = toml_load_problems("example.md", &toml).join("\n");
    assert!(
        load.contains("example.md:18") && load.contains("adress"),
        "{load}"
    );
}

#[test]
fn the_checker_accepts_optional_arguments_in_an_array() {
    let doc = "\
```bash
keys=(
  --from-literal=database-url='…'
  # --from-literal=temporal-api-key='…'    # temporal.api_key
)
kubectl create secret generic firstline -n firstline \"${keys[@]}\"
kafka-topics.sh --bootstrap-server kafka.kafka.svc.cluster.local:9092 \\
  --partitions 6
```
";
    assert_eq!(shell_problems("ok.md", doc), Vec::<String>::new());
    assert_eq!(setting_problems("ok.md", doc), Vec::<String>::new());
}

// --- the document's blocks ----------------------------------------------------------------------

/// A fenced code block.
#[derive(Debug, Clone)]
struct Block {
    /// The fence's tag (`sh`, `toml`, …; empty without one).
    tag: String,
    /// The 1-based line number, in the document, of the block's first line.
    line: usize,
    /// The block's lines, without the fence's indentation.
    text: String,
}

impl Block {
    fn is_shell(&self) -> bool {
        SHELL_TAGS.contains(&self.tag.as_str())
    }

    /// The block's first line, which names it in a failure.
    fn first_line(&self) -> &str {
        self.text.lines().next().unwrap_or("").trim()
    }

    /// Where a failure points: the document, a line, and the block by its first line.
    fn at(&self, doc: &str, offset: usize) -> String {
        format!(
            "{doc}:{} (block `{}`)",
            self.line + offset,
            self.first_line()
        )
    }

    /// The shell to check: for `console`, the commands after a `$ ` prompt (with their
    /// continuation lines), the output blanked so that line numbers still match.
    fn script(&self) -> String {
        if self.tag != "console" {
            return self.text.clone();
        }
        let mut continued = false;
        let mut script = String::new();
        for line in self.text.lines() {
            let command = match line.trim_start().strip_prefix("$ ") {
                Some(command) => Some(command),
                None if continued => Some(line),
                None => None,
            };
            continued = command.is_some_and(|c| c.trim_end().ends_with('\\'));
            script.push_str(command.unwrap_or(""));
            script.push('\n');
        }
        script
    }
}

/// Every fenced block of a Markdown document (fences may be indented, as in a list item).
fn blocks(doc: &str) -> Vec<Block> {
    let mut found = Vec::new();
    // The open block and its fence's indentation.
    let mut open: Option<(usize, Block)> = None;
    for (index, line) in doc.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        let fence = line.trim_start().starts_with("```");
        match open.take() {
            None if fence => {
                let tag = line.trim_start()[3..]
                    .split_whitespace()
                    .next()
                    .unwrap_or("")
                    .to_string();
                let block = Block {
                    tag,
                    line: index + 2,
                    text: String::new(),
                };
                open = Some((indent, block));
            }
            None => {}
            Some((_, block)) if fence => found.push(block),
            Some((fence_indent, mut block)) => {
                block.text.push_str(&line[indent.min(fence_indent)..]);
                block.text.push('\n');
                open = Some((fence_indent, block));
            }
        }
    }
    found
}

/// The document outside its fenced blocks.
fn prose(doc: &str) -> String {
    let mut inside = false;
    let mut text = String::new();
    for line in doc.lines() {
        if line.trim_start().starts_with("```") {
            inside = !inside;
            text.push('\n');
            continue;
        }
        if !inside {
            text.push_str(line);
        }
        text.push('\n');
    }
    text
}

// --- complete shell -----------------------------------------------------------------------------

/// Everything wrong with the document's shell blocks, one line each, naming where.
fn shell_problems(doc_name: &str, doc: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for block in blocks(doc).iter().filter(|b| b.is_shell()) {
        let script = block.script();
        if let Err(error) = bash_parses(&script) {
            problems.push(format!("{}: bash -n: {error}", block.at(doc_name, 0)));
        }
        problems.extend(
            continuation_problems(&script)
                .into_iter()
                .map(|(offset, problem)| format!("{}: {problem}", block.at(doc_name, offset))),
        );
        // Each optional argument, uncommented, must leave shell that still parses.
        let lines: Vec<&str> = script.lines().collect();
        for (offset, line) in lines.iter().enumerate() {
            let Some(argument) = commented_argument(line) else {
                continue;
            };
            let mut variant = lines.clone();
            let indent = &line[..line.len() - line.trim_start().len()];
            let uncommented = format!("{indent}{argument}");
            variant[offset] = &uncommented;
            if let Err(error) = bash_parses(&(variant.join("\n") + "\n")) {
                problems.push(format!(
                    "{}: uncommented, this line no longer parses: {error}",
                    block.at(doc_name, offset)
                ));
            }
        }
    }
    problems
}

/// `bash -n` on a script: Ok, or bash's own message.
fn bash_parses(script: &str) -> Result<(), String> {
    let mut child = Command::new("bash")
        .arg("-n")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs (it checks the docs' shell)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(script.as_bytes())
        .expect("writing the block to bash");
    let output = child.wait_with_output().expect("bash -n finishes");
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr)
            .trim()
            .replace('\n', "; "))
    }
}

/// The argument a comment line holds, if it is a commented-out argument (`# --flag=…`,
/// `# [--flag …]`), without the `#`.
fn commented_argument(line: &str) -> Option<&str> {
    let content = line.trim_start().strip_prefix('#')?.trim_start();
    content
        .trim_start_matches('[')
        .starts_with('-')
        .then_some(content)
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with('#')
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// A `name=(` line, which opens an array literal.
fn opens_array(line: &str) -> bool {
    let line = line.trim();
    line.strip_suffix("=(").is_some_and(|name| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Continuations that break a command or cannot be uncommented: `(line offset, problem)`.
fn continuation_problems(script: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = script.lines().collect();
    let mut problems = Vec::new();
    let mut in_array = false;
    for (offset, line) in lines.iter().enumerate() {
        let next = lines.get(offset + 1).copied();
        let previous = offset.checked_sub(1).map(|i| lines[i]);
        if is_blank(line) {
            continue;
        }
        if is_comment(line) {
            if line.trim_end().ends_with('\\') && !next.is_some_and(is_comment) {
                problems.push((
                    offset,
                    "a commented line ends in `\\` before a live or blank line: uncommented, it \
                     would swallow the next line"
                        .into(),
                ));
            }
            let continues_a_comment =
                previous.is_some_and(|p| is_comment(p) && p.trim_end().ends_with('\\'));
            if commented_argument(line).is_some() && !in_array && !continues_a_comment {
                problems.push((
                    offset,
                    "commented-out argument outside an array: uncommented, it belongs to no \
                     command (put optional arguments in an array literal, or comment out a \
                     whole command)"
                        .into(),
                ));
            }
            continue;
        }
        // A live line.
        if opens_array(line) {
            in_array = true;
        } else if in_array && line.trim_start().starts_with(')') {
            in_array = false;
        }
        if let Some(at) = line.find('\\') {
            let rest = &line[at + 1..];
            let trimmed = rest.trim_start();
            if rest.len() != trimmed.len() && trimmed.starts_with('#') {
                problems.push((
                    offset,
                    "`\\` followed by a comment: the `\\` escapes a space and the command ends on \
                     this line"
                        .into(),
                ));
            }
        }
        if line.trim_end().ends_with('\\') && !line.ends_with('\\') {
            problems.push((
                offset,
                "whitespace after the final `\\`: the line does not continue".into(),
            ));
        } else if line.ends_with('\\') {
            match next {
                None => problems.push((
                    offset,
                    "dangling continuation: `\\` at the end of the block".into(),
                )),
                Some(next) if is_blank(next) => problems.push((
                    offset,
                    "dangling continuation: `\\` followed by a blank line".into(),
                )),
                Some(next) if is_comment(next) => problems.push((
                    offset + 1,
                    "dangling continuation: the line before ends in `\\` and this one is a \
                     comment, which ends the command (and cannot be uncommented into it)"
                        .into(),
                )),
                Some(_) => {}
            }
        }
    }
    problems
}

// --- settings named -----------------------------------------------------------------------------

/// A setting the document names, and where.
#[derive(Debug, Clone)]
struct Named {
    /// `FIRSTLINE_SECTION__KEY` or `section.key`.
    name: String,
    /// 1-based line in the document.
    line: usize,
}

/// Every setting name in the document's shell and TOML blocks and in its inline code.
fn setting_names(doc: &str) -> Vec<Named> {
    let sections: BTreeSet<String> = Settings::keys()
        .into_iter()
        .filter_map(|(key, _)| key.split_once('.').map(|(s, _)| s.to_string()))
        .collect();
    let mut names = Vec::new();
    for block in blocks(doc) {
        if block.is_shell() {
            for (offset, line) in block.text.lines().enumerate() {
                names.extend(words_naming_settings(line, &sections).map(|name| Named {
                    name,
                    line: block.line + offset,
                }));
            }
        } else if block.tag == "toml" {
            names.extend(toml_names(&block));
        }
    }
    // Inline code in the prose; a span may wrap onto the next line.
    let prose = prose(doc);
    let mut line = 1;
    for (index, piece) in prose.split('`').enumerate() {
        if index % 2 == 1 {
            for (offset, text) in piece.lines().enumerate() {
                names.extend(words_naming_settings(text, &sections).map(|name| Named {
                    name,
                    line: line + offset,
                }));
            }
        }
        line += piece.matches('\n').count();
    }
    names
}

/// The words of a line that name a setting: `FIRSTLINE_…` variables, and `section.key` words
/// whose section is one of Firstline's (so hosts like `postgres.db` are not taken for settings).
fn words_naming_settings<'a>(
    line: &'a str,
    sections: &'a BTreeSet<String>,
) -> impl Iterator<Item = String> + 'a {
    line.split(|c: char| c.is_whitespace() || "`'\"()[]{},;=|&<>!?".contains(c))
        .filter_map(move |word| {
            let word = word.trim_end_matches(['.', ':']);
            if let Some(variable) = word.find("FIRSTLINE_").map(|at| &word[at..]) {
                let end = variable
                    .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
                    .unwrap_or(variable.len());
                let variable = &variable[..end];
                return (variable.len() > "FIRSTLINE_".len()).then(|| variable.to_string());
            }
            let (section, key) = word.split_once('.')?;
            let is_name = |s: &str| {
                s.starts_with(|c: char| c.is_ascii_lowercase())
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            };
            (is_name(section)
                && is_name(key)
                && sections.contains(section)
                && !FILE_EXTENSIONS.contains(&key))
            .then(|| word.to_string())
        })
}

/// `section.key` for every `[section]` header and `key = …` line of a TOML block, commented
/// lines included (an operator uncomments them). Keys under `[[section.list]]` are the list's
/// own (checked by loading the block).
fn toml_names(block: &Block) -> Vec<Named> {
    let mut names = Vec::new();
    let mut table: Option<String> = None;
    for (offset, line) in block.text.lines().enumerate() {
        let line_number = block.line + offset;
        let content = line.trim_start().trim_start_matches('#').trim();
        if let Some(header) = content.strip_prefix("[[") {
            let header = header.split("]]").next().unwrap_or("").trim();
            names.push(Named {
                name: header.to_string(),
                line: line_number,
            });
            table = None;
        } else if let Some(header) = content.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or("").trim().to_string();
            table = Some(header);
        } else if let (Some(table), Some((key, _))) = (&table, content.split_once('=')) {
            let key = key.trim();
            if !key.is_empty() && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                names.push(Named {
                    name: format!("{table}.{key}"),
                    line: line_number,
                });
            }
        }
    }
    names
}

/// Every name the document gives a setting that no setting has.
fn setting_problems(doc_name: &str, doc: &str) -> Vec<String> {
    let keys = Settings::keys();
    let known: BTreeSet<&str> = keys
        .iter()
        .flat_map(|(key, env)| [key.as_str(), env.as_str()])
        .chain(NOT_SETTINGS.iter().copied())
        .collect();
    setting_names(doc)
        .into_iter()
        .filter(|named| !known.contains(named.name.as_str()))
        .map(|named| {
            format!(
                "{doc_name}:{}: `{}` is not a setting (README.md's table lists them)",
                named.line, named.name
            )
        })
        .collect()
}

/// Loads a TOML block with Firstline's loader (unknown keys and bad values fail), as written
/// and with its commented `key = …` lines uncommented.
fn toml_load_problems(doc_name: &str, block: &Block) -> Vec<String> {
    let uncommented: String = block
        .text
        .lines()
        .map(|line| {
            let content = line.trim_start().strip_prefix('#').map(str::trim_start);
            match content {
                Some(c)
                    if c.split_once('=').is_some_and(|(k, _)| {
                        let k = k.trim();
                        !k.is_empty() && k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    }) =>
                {
                    c
                }
                _ => line,
            }
        })
        .map(|line| format!("{line}\n"))
        .collect();
    let mut problems = Vec::new();
    for (how, text) in [("as written", &block.text), ("uncommented", &uncommented)] {
        let mut file = tempfile::NamedTempFile::new().expect("a temporary file");
        file.write_all(text.as_bytes()).expect("writing the block");
        // A pod reads the install's names from its environment (deploy/names), which wins over
        // the file; a block about TLS to Temporal assumes the https:// address set there.
        let names = Serialized::default("temporal.address", "https://temporal.example:7233");
        let figment = Figment::from(Serialized::defaults(Settings::default()))
            .merge(names)
            .merge(Toml::file(file.path()));
        if let Err(error) = Settings::from_figment(figment) {
            problems.push(format!(
                "{}: does not load ({how}): {error}",
                block.at(doc_name, 0)
            ));
        }
    }
    problems
}

// --- the Secret's keys --------------------------------------------------------------------------

/// A container's variable read from a Secret's key.
#[derive(Debug)]
struct SecretKeyRef {
    /// The manifest, relative to the repository.
    file: String,
    /// The environment variable it sets.
    variable: String,
    key: String,
    optional: bool,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `secretKeyRef` to `secret` in the YAML under `dir`, read as text: each is
/// `- name: VAR` / `valueFrom:` / `secretKeyRef:` followed by its `name`, `key` and `optional`.
fn secret_key_refs(dir: &Path, secret: &str) -> Vec<SecretKeyRef> {
    let mut refs = Vec::new();
    let mut files = vec![dir.to_path_buf()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            let entries = std::fs::read_dir(&path).expect("deploy/ is readable");
            files.extend(entries.map(|e| e.expect("an entry").path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("a manifest");
        let file = path
            .strip_prefix(root())
            .unwrap_or(&path)
            .display()
            .to_string();
        let lines: Vec<&str> = text.lines().collect();
        for (index, line) in lines.iter().enumerate() {
            if line.trim() != "secretKeyRef:" {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            let field = |name: &str| {
                lines[index + 1..]
                    .iter()
                    .take_while(|l| l.len() - l.trim_start().len() > indent)
                    .find_map(|l| l.trim().strip_prefix(&format!("{name}:")))
                    .map(|v| v.trim().trim_matches('"').to_string())
            };
            if field("name").as_deref() != Some(secret) {
                continue;
            }
            let variable = lines[..index]
                .iter()
                .rev()
                .find_map(|l| l.trim().strip_prefix("- name:"))
                .unwrap_or("?")
                .trim()
                .to_string();
            refs.push(SecretKeyRef {
                file: file.clone(),
                variable,
                key: field("key").expect("a secretKeyRef has a key"),
                optional: field("optional").as_deref() == Some("true"),
            });
        }
    }
    refs
}
