//! Reading a community runbook (Markdown): its "Meaning" as one plain-text paragraph and its
//! "Mitigation" as a few short plain-text points, for a report that quotes them next to the
//! evidence. Only the Markdown the vendored runbooks use is understood: `##` sections, paragraphs,
//! list items, fenced code, `<details>` HTML, links, inline code and emphasis.

/// At most this many mitigation points: the report shows a hint, the runbook has the rest.
const MAX_POINTS: usize = 6;
/// A point longer than this is cut at a word boundary and ends with `…`.
const MAX_POINT_CHARS: usize = 240;

/// The text of the level-2 section `## {title}`, up to the next level-1 or level-2 heading
/// (headings inside fenced code, like a shell's `# comment`, do not count).
pub(super) fn section<'a>(markdown: &'a str, title: &str) -> Option<&'a str> {
    let mut start = None;
    let mut in_code = false;
    let mut offset = 0;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_end();
        if trimmed.trim_start().starts_with("```") {
            in_code = !in_code;
        } else if !in_code && (trimmed.starts_with("# ") || trimmed.starts_with("## ")) {
            if let Some(begin) = start {
                return Some(&markdown[begin..offset]);
            }
            if trimmed
                .strip_prefix("## ")
                .is_some_and(|heading| heading.trim().eq_ignore_ascii_case(title))
            {
                start = Some(offset + line.len());
            }
        }
        offset += line.len();
    }
    start.map(|begin| &markdown[begin..])
}

/// A block of a section, as far as the catalogue cares.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Block {
    Paragraph(String),
    Item(String),
    Code,
    Other,
}

fn blocks(section: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut in_code = false;
    // Whether the last block still takes continuation lines.
    let mut open = false;
    for line in section.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            if !in_code {
                blocks.push(Block::Code);
            }
            in_code = !in_code;
            open = false;
            continue;
        }
        if in_code {
            continue;
        }
        if trimmed.is_empty() {
            open = false;
        } else if trimmed.starts_with('#') || trimmed.starts_with('<') {
            blocks.push(Block::Other);
            open = false;
        } else if let Some(item) = list_item(trimmed) {
            blocks.push(Block::Item(item.to_owned()));
            open = true;
        } else if open && let Some(Block::Paragraph(text) | Block::Item(text)) = blocks.last_mut() {
            text.push('\n');
            text.push_str(trimmed);
        } else {
            blocks.push(Block::Paragraph(trimmed.to_owned()));
            open = true;
        }
    }
    blocks
}

/// The text of a list item line (`- x`, `* x`, `+ x`, `1. x`), if it is one.
fn list_item(line: &str) -> Option<&str> {
    if let Some(rest) = ["- ", "* ", "+ "].iter().find_map(|m| line.strip_prefix(m)) {
        return Some(rest.trim_start());
    }
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (digits > 0)
        .then(|| line[digits..].strip_prefix(". "))
        .flatten()
        .map(str::trim_start)
}

/// The first paragraph of the "Meaning" section, plain text.
pub(super) fn meaning(markdown: &str) -> Option<String> {
    let blocks = blocks(section(markdown, "Meaning")?);
    let first = blocks
        .iter()
        .find_map(|b| match b {
            Block::Paragraph(text) => Some(text),
            _ => None,
        })
        .or_else(|| {
            blocks.iter().find_map(|b| match b {
                Block::Item(text) => Some(text),
                _ => None,
            })
        })?;
    Some(plain_text(first, false)).filter(|text| !text.is_empty())
}

/// Short points from the "Mitigation" section: its list items and paragraphs, plain text with
/// link targets kept (a "See …" point is only useful with its address), without repeats.
///
/// Left out: placeholders (`TODO`) and footnote lists (`- [1](…)`). A lead-in paragraph ending
/// in `:` is dropped before a code block (the command is not shown), joined to the paragraph it
/// introduces, joined to a list of short names (`Example services: cassandra, ceph, …`), and
/// dropped before a list of real points, which stand on their own.
pub(super) fn mitigation(markdown: &str) -> Vec<String> {
    let Some(section) = section(markdown, "Mitigation") else {
        return Vec::new();
    };
    let blocks = blocks(section);
    let mut points: Vec<String> = Vec::new();
    let mut i = 0;
    while i < blocks.len() && points.len() < MAX_POINTS {
        let point = match &blocks[i] {
            Block::Paragraph(text) if text.ends_with(':') => {
                let lead_in = plain_text(text, true);
                // An enumeration is shown by name; its links would not keep the point short.
                let items: Vec<String> = blocks[i + 1..]
                    .iter()
                    .map_while(|b| match b {
                        Block::Item(item) if !is_footnote(item) => Some(plain_text(item, false)),
                        _ => None,
                    })
                    .collect();
                match blocks.get(i + 1) {
                    Some(Block::Code) => None,
                    Some(Block::Paragraph(next)) if !introduces_code(&blocks, i + 1) => {
                        i += 1;
                        Some(format!("{lead_in} {}", plain_text(next, true)))
                    }
                    Some(Block::Item(_)) if !items.is_empty() => {
                        if items
                            .iter()
                            .all(|item| item.chars().count() <= MAX_NAME_CHARS)
                        {
                            i += items.len();
                            Some(format!("{lead_in} {}.", items.join(", ")))
                        } else {
                            None
                        }
                    }
                    _ => Some(format!("{}.", lead_in.trim_end_matches(':'))),
                }
            }
            Block::Paragraph(text) => Some(plain_text(text, true)),
            Block::Item(text) if !is_footnote(text) => Some(plain_text(text, true)),
            Block::Item(_) | Block::Code | Block::Other => None,
        };
        i += 1;
        if let Some(point) = point.map(|p| shorten(&p))
            && !point.is_empty()
            && !point.eq_ignore_ascii_case("todo")
            && !points.contains(&point)
        {
            points.push(point);
        }
    }
    points
}

/// A list item this short is a name in an enumeration (`cassandra`, `jq`), not a point of its
/// own.
const MAX_NAME_CHARS: usize = 48;

/// Whether the paragraph at `i` is a lead-in to a code block.
fn introduces_code(blocks: &[Block], i: usize) -> bool {
    matches!(&blocks[i], Block::Paragraph(text) if text.ends_with(':'))
        && matches!(blocks.get(i + 1), Some(Block::Code))
}

/// `[1](https://…)`: a numbered reference, not advice.
fn is_footnote(item: &str) -> bool {
    item.strip_prefix('[')
        .and_then(|rest| rest.split_once("]("))
        .is_some_and(|(label, rest)| {
            label.bytes().all(|b| b.is_ascii_digit()) && rest.ends_with(')') && !rest.contains(' ')
        })
}

fn shorten(point: &str) -> String {
    if point.chars().count() <= MAX_POINT_CHARS {
        return point.to_owned();
    }
    let cut: String = point.chars().take(MAX_POINT_CHARS).collect();
    let cut = match cut.rfind(' ') {
        Some(space) => &cut[..space],
        None => &cut,
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

/// Markdown to plain text: links become their text (and `text (url)` when `urls` and the target
/// is a web address), inline code and emphasis lose their markers, whitespace collapses.
pub(super) fn plain_text(markdown: &str, urls: bool) -> String {
    let mut out = String::with_capacity(markdown.len());
    let chars: Vec<char> = markdown.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '`' => {
                // Inline code: its text, untouched (no emphasis inside `node_filesystem_*`).
                match chars[i + 1..].iter().position(|&x| x == '`') {
                    Some(len) => {
                        out.extend(&chars[i + 1..i + 1 + len]);
                        i += len + 2;
                    }
                    None => {
                        out.push(c);
                        i += 1;
                    }
                }
            }
            '[' => match link(&chars, i) {
                Some((text, target, end)) => {
                    out.push_str(&plain_text(&text, false));
                    if urls
                        && let Some(target) = target
                        && (target.starts_with("http://") || target.starts_with("https://"))
                    {
                        out.push_str(" (");
                        out.push_str(&target);
                        out.push(')');
                    }
                    i = end;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            },
            '*' | '_' => {
                let run = chars[i..].iter().take_while(|&&x| x == c).count();
                let before = i.checked_sub(1).map(|j| chars[j]);
                let after = chars.get(i + run).copied();
                let word = |x: Option<char>| x.is_some_and(char::is_alphanumeric);
                // An emphasis marker opens before a word or closes after one, but never sits
                // inside a word (`snake_case`) or alone between spaces (`2 * 3`).
                let opens = !word(before) && after.is_some_and(|a| !a.is_whitespace());
                let closes = before.is_some_and(|b| !b.is_whitespace()) && !word(after);
                if !(opens || closes) {
                    out.extend(&chars[i..i + run]);
                }
                i += run;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A link at `chars[start] == '['`: `[text](target)` or `[text][ref]`; its text, its target
/// (inline links only) and the index after it.
fn link(chars: &[char], start: usize) -> Option<(String, Option<String>, usize)> {
    let mut depth = 0;
    let mut close = None;
    for (j, &c) in chars.iter().enumerate().skip(start) {
        match c {
            '[' => depth += 1,
            ']' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(j);
                    break;
                }
            }
            _ => {}
        }
    }
    let close = close?;
    let text: String = chars[start + 1..close].iter().collect();
    match chars.get(close + 1) {
        Some('(') => {
            let mut depth = 0;
            for (j, &c) in chars.iter().enumerate().skip(close + 1) {
                match c {
                    '(' => depth += 1,
                    ')' => {
                        depth -= 1;
                        if depth == 0 {
                            let target: String = chars[close + 2..j].iter().collect();
                            return Some((text, Some(target.trim().to_owned()), j + 1));
                        }
                    }
                    _ => {}
                }
            }
            None
        }
        Some('[') => {
            let end = chars[close + 1..].iter().position(|&c| c == ']')?;
            Some((text, None, close + 1 + end + 1))
        }
        _ => None,
    }
}
