//! BERT uncased WordPiece: text → token ids, as the model was trained to read them.
//!
//! The model only understands ids from its own `vocab.txt`, split the way Hugging Face's
//! `tokenizer.json` for all-MiniLM-L6-v2 splits them (`BertNormalizer` → `BertPreTokenizer` →
//! `WordPiece` → `[CLS] … [SEP]`). Any drift here — a missed accent, a punctuation character left
//! glued to a word — silently moves the embedding, so every step mirrors that pipeline:
//!
//! 1. Special tokens written verbatim in the text (`[SEP]`, …) are split out first and kept as
//!    themselves, as HF does for its "added tokens" (they are matched before normalisation).
//! 2. Clean: drop NUL, U+FFFD and control/format/private-use characters; any whitespace → space.
//! 3. Put spaces around CJK ideographs, so each one is its own word.
//! 4. Strip accents (NFD, then drop non-spacing marks), then lowercase.
//! 5. Split on whitespace, and make every punctuation character a word of its own.
//! 6. WordPiece each word: greedy longest match first, `##` marks a continuation; a word with
//!    no full split, or longer than 100 characters, becomes a single `[UNK]`.
//! 7. Truncate to the model's maximum length and wrap in `[CLS]` … `[SEP]`.
//!
//! The Unicode category tables at the bottom were generated from Python 3.11's `unicodedata`
//! (Unicode 14.0). HF's tokenizer takes its categories from an older Unicode release, so the two
//! can disagree on characters assigned since; nothing common in incident text is among them.

use std::collections::HashMap;
use std::path::Path;

use unicode_normalization::UnicodeNormalization;

use crate::EmbedError;

/// BERT's special tokens. HF matches these verbatim in input text (its "added tokens").
const SPECIAL_TOKENS: [&str; 5] = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"];

/// Longer words are not split at all but become `[UNK]` (HF's `max_input_chars_per_word`).
const MAX_WORD_CHARS: usize = 100;

/// A vocabulary and the rules for splitting text into its pieces.
#[derive(Debug)]
pub struct Tokenizer {
    /// Pieces that may start a word.
    initial: HashMap<String, u32>,
    /// `##` pieces, keyed without the `##`, so a lookup needs no allocation.
    continuation: HashMap<String, u32>,
    /// Ids of [`SPECIAL_TOKENS`] present in the vocabulary.
    specials: Vec<(&'static str, u32)>,
    cls: u32,
    sep: u32,
    unk: u32,
    /// Most ids [`Tokenizer::encode`] returns, `[CLS]` and `[SEP]` included.
    max_len: usize,
}

impl Tokenizer {
    /// Reads `vocab.txt` (one piece a line; the id is the line number, from 0).
    pub fn load(path: &Path, max_len: usize) -> Result<Tokenizer, EmbedError> {
        let error = |reason: String| EmbedError::Model {
            path: path.display().to_string(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| error(e.to_string()))?;
        Tokenizer::from_vocab(&text, max_len).map_err(error)
    }

    /// Builds the tokenizer from the text of a `vocab.txt`.
    pub fn from_vocab(vocab: &str, max_len: usize) -> Result<Tokenizer, String> {
        if max_len < 2 {
            return Err(format!(
                "a maximum length of {max_len} leaves no room for [CLS] and [SEP]"
            ));
        }
        let mut initial = HashMap::new();
        let mut continuation = HashMap::new();
        for (id, line) in vocab.lines().enumerate() {
            let id = u32::try_from(id).map_err(|_| "vocabulary has over 2^32 lines".to_string())?;
            // As HF's WordPiece reader: trailing whitespace (a CRLF file) is not part of the piece.
            let piece = line.trim_end();
            match piece.strip_prefix("##") {
                Some(rest) => continuation.insert(rest.to_string(), id),
                None => initial.insert(piece.to_string(), id),
            };
        }
        let required = |name: &str| {
            initial
                .get(name)
                .copied()
                .ok_or_else(|| format!("vocabulary has no {name} token"))
        };
        let (cls, sep, unk) = (required("[CLS]")?, required("[SEP]")?, required("[UNK]")?);
        let specials = SPECIAL_TOKENS
            .iter()
            .filter_map(|name| initial.get(*name).map(|&id| (*name, id)))
            .collect();
        Ok(Tokenizer {
            initial,
            continuation,
            specials,
            cls,
            sep,
            unk,
            max_len,
        })
    }

    /// The id of one vocabulary piece (`"##set"` for a continuation), if it has one.
    pub fn id(&self, piece: &str) -> Option<u32> {
        match piece.strip_prefix("##") {
            Some(rest) => self.continuation.get(rest).copied(),
            None => self.initial.get(piece).copied(),
        }
    }

    /// Largest id in the vocabulary, which the embedding matrix must cover.
    pub fn max_id(&self) -> u32 {
        self.initial
            .values()
            .chain(self.continuation.values())
            .copied()
            .max()
            .unwrap_or(0)
    }

    /// `[CLS]`, the text's pieces (truncated to the maximum length), `[SEP]`.
    pub fn encode(&self, text: &str) -> Vec<u32> {
        // [CLS] and the pieces must leave room for [SEP].
        let limit = self.max_len - 1;
        let mut ids = Vec::with_capacity(limit.min(text.len() / 3 + 8) + 1);
        ids.push(self.cls);
        let mut rest = text;
        while ids.len() < limit && !rest.is_empty() {
            let (plain, special) = self.next_special(rest);
            self.encode_plain(&rest[..plain], limit, &mut ids);
            let Some((len, id)) = special else { break };
            if ids.len() < limit {
                ids.push(id);
            }
            rest = &rest[plain + len..];
        }
        ids.push(self.sep);
        ids
    }

    /// The byte length of the text before the first special token, and that token's byte length
    /// and id.
    fn next_special(&self, text: &str) -> (usize, Option<(usize, u32)>) {
        for (at, _) in text.match_indices('[') {
            for &(name, id) in &self.specials {
                if text[at..].starts_with(name) {
                    return (at, Some((name.len(), id)));
                }
            }
        }
        (text.len(), None)
    }

    /// Appends the pieces of text without special tokens until `ids` holds `limit` ids.
    fn encode_plain(&self, text: &str, limit: usize, ids: &mut Vec<u32>) {
        let normalized = normalize(text);
        for word in pre_tokenize(&normalized) {
            if ids.len() >= limit {
                return;
            }
            self.word_piece(word, ids);
            ids.truncate(limit);
        }
    }

    /// Greedy longest-match-first split of one word, or `[UNK]` when it has no full split.
    fn word_piece(&self, word: &str, ids: &mut Vec<u32>) {
        if word.chars().count() > MAX_WORD_CHARS {
            ids.push(self.unk);
            return;
        }
        let first = ids.len();
        let mut start = 0;
        while start < word.len() {
            let table = if start == 0 {
                &self.initial
            } else {
                &self.continuation
            };
            let mut end = word.len();
            let found = loop {
                if let Some(&id) = table.get(&word[start..end]) {
                    break Some(id);
                }
                // Shorten by one character; `end` stays on a character boundary.
                match word[start..end].char_indices().next_back() {
                    Some((last, _)) if last > 0 => end = start + last,
                    _ => break None,
                }
            };
            match found {
                Some(id) => ids.push(id),
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    return;
                }
            }
            start = end;
        }
    }
}

/// HF's `BertNormalizer` with `clean_text`, `handle_chinese_chars`, `lowercase` and (implied by
/// lowercase) `strip_accents`, in its order: accents are stripped before lowercasing.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{FFFD}' || is_other(c) {
            continue;
        }
        if c.is_whitespace() {
            cleaned.push(' ');
        } else if is_cjk(c) {
            cleaned.push(' ');
            cleaned.push(c);
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    // Per character, like HF: no context-dependent rules such as final sigma.
    cleaned
        .nfd()
        .filter(|&c| !in_table(c, NONSPACING_MARKS))
        .flat_map(char::to_lowercase)
        .collect()
}

/// HF's `BertPreTokenizer`: words split at whitespace, each punctuation character a word.
fn pre_tokenize(text: &str) -> impl Iterator<Item = &str> {
    text.split(char::is_whitespace).flat_map(|chunk| {
        let mut rest = chunk;
        std::iter::from_fn(move || {
            let (at, c) = rest
                .char_indices()
                .find(|&(_, c)| is_punctuation(c))
                .unwrap_or((rest.len(), ' '));
            let word = if at > 0 {
                &rest[..at]
            } else if at < rest.len() {
                &rest[..c.len_utf8()]
            } else {
                return None;
            };
            rest = &rest[word.len()..];
            Some(word)
        })
    })
}

/// Categories Cc, Cf and Co, which cleaning drops; tab, newline and carriage return are kept
/// (as whitespace). (HF's check also names Cn, unassigned code
/// points, but in practice keeps them — they come out as `[UNK]` — so they are not dropped here
/// either.)
fn is_other(c: char) -> bool {
    if matches!(c, '\t' | '\n' | '\r') {
        return false;
    }
    c.is_control() || in_table(c, FORMAT_OR_PRIVATE)
}

/// BERT's punctuation: all ASCII non-alphanumeric printable characters (so `$`, `+`, `^`, … too,
/// though Unicode calls them symbols), plus Unicode's P* categories.
fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || (!c.is_ascii() && in_table(c, PUNCTUATION))
}

/// The ranges BERT treats as CJK ideographs. `0x2B920` (not `0x2B820`) is deliberate: it is what
/// HF's tokenizer uses, and the ids must match it, not the Unicode block.
fn is_cjk(c: char) -> bool {
    matches!(
        c as u32,
        0x4E00..=0x9FFF
            | 0x3400..=0x4DBF
            | 0x20000..=0x2A6DF
            | 0x2A700..=0x2B73F
            | 0x2B740..=0x2B81F
            | 0x2B920..=0x2CEAF
            | 0xF900..=0xFAFF
            | 0x2F800..=0x2FA1F
    )
}

fn in_table(c: char, table: &[(u32, u32)]) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(low, high)| {
            if high < c {
                std::cmp::Ordering::Less
            } else if low > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

// Generated from Python 3.11 `unicodedata` (Unicode 14.0) by collecting the code points of the
// named categories into inclusive ranges.

/// General category P* (Pc Pd Ps Pe Pi Pf Po).
#[rustfmt::skip]
const PUNCTUATION: &[(u32, u32)] = &[
    (0x0021, 0x0023), (0x0025, 0x002A), (0x002C, 0x002F), (0x003A, 0x003B),
    (0x003F, 0x0040), (0x005B, 0x005D), (0x005F, 0x005F), (0x007B, 0x007B),
    (0x007D, 0x007D), (0x00A1, 0x00A1), (0x00A7, 0x00A7), (0x00AB, 0x00AB),
    (0x00B6, 0x00B7), (0x00BB, 0x00BB), (0x00BF, 0x00BF), (0x037E, 0x037E),
    (0x0387, 0x0387), (0x055A, 0x055F), (0x0589, 0x058A), (0x05BE, 0x05BE),
    (0x05C0, 0x05C0), (0x05C3, 0x05C3), (0x05C6, 0x05C6), (0x05F3, 0x05F4),
    (0x0609, 0x060A), (0x060C, 0x060D), (0x061B, 0x061B), (0x061D, 0x061F),
    (0x066A, 0x066D), (0x06D4, 0x06D4), (0x0700, 0x070D), (0x07F7, 0x07F9),
    (0x0830, 0x083E), (0x085E, 0x085E), (0x0964, 0x0965), (0x0970, 0x0970),
    (0x09FD, 0x09FD), (0x0A76, 0x0A76), (0x0AF0, 0x0AF0), (0x0C77, 0x0C77),
    (0x0C84, 0x0C84), (0x0DF4, 0x0DF4), (0x0E4F, 0x0E4F), (0x0E5A, 0x0E5B),
    (0x0F04, 0x0F12), (0x0F14, 0x0F14), (0x0F3A, 0x0F3D), (0x0F85, 0x0F85),
    (0x0FD0, 0x0FD4), (0x0FD9, 0x0FDA), (0x104A, 0x104F), (0x10FB, 0x10FB),
    (0x1360, 0x1368), (0x1400, 0x1400), (0x166E, 0x166E), (0x169B, 0x169C),
    (0x16EB, 0x16ED), (0x1735, 0x1736), (0x17D4, 0x17D6), (0x17D8, 0x17DA),
    (0x1800, 0x180A), (0x1944, 0x1945), (0x1A1E, 0x1A1F), (0x1AA0, 0x1AA6),
    (0x1AA8, 0x1AAD), (0x1B5A, 0x1B60), (0x1B7D, 0x1B7E), (0x1BFC, 0x1BFF),
    (0x1C3B, 0x1C3F), (0x1C7E, 0x1C7F), (0x1CC0, 0x1CC7), (0x1CD3, 0x1CD3),
    (0x2010, 0x2027), (0x2030, 0x2043), (0x2045, 0x2051), (0x2053, 0x205E),
    (0x207D, 0x207E), (0x208D, 0x208E), (0x2308, 0x230B), (0x2329, 0x232A),
    (0x2768, 0x2775), (0x27C5, 0x27C6), (0x27E6, 0x27EF), (0x2983, 0x2998),
    (0x29D8, 0x29DB), (0x29FC, 0x29FD), (0x2CF9, 0x2CFC), (0x2CFE, 0x2CFF),
    (0x2D70, 0x2D70), (0x2E00, 0x2E2E), (0x2E30, 0x2E4F), (0x2E52, 0x2E5D),
    (0x3001, 0x3003), (0x3008, 0x3011), (0x3014, 0x301F), (0x3030, 0x3030),
    (0x303D, 0x303D), (0x30A0, 0x30A0), (0x30FB, 0x30FB), (0xA4FE, 0xA4FF),
    (0xA60D, 0xA60F), (0xA673, 0xA673), (0xA67E, 0xA67E), (0xA6F2, 0xA6F7),
    (0xA874, 0xA877), (0xA8CE, 0xA8CF), (0xA8F8, 0xA8FA), (0xA8FC, 0xA8FC),
    (0xA92E, 0xA92F), (0xA95F, 0xA95F), (0xA9C1, 0xA9CD), (0xA9DE, 0xA9DF),
    (0xAA5C, 0xAA5F), (0xAADE, 0xAADF), (0xAAF0, 0xAAF1), (0xABEB, 0xABEB),
    (0xFD3E, 0xFD3F), (0xFE10, 0xFE19), (0xFE30, 0xFE52), (0xFE54, 0xFE61),
    (0xFE63, 0xFE63), (0xFE68, 0xFE68), (0xFE6A, 0xFE6B), (0xFF01, 0xFF03),
    (0xFF05, 0xFF0A), (0xFF0C, 0xFF0F), (0xFF1A, 0xFF1B), (0xFF1F, 0xFF20),
    (0xFF3B, 0xFF3D), (0xFF3F, 0xFF3F), (0xFF5B, 0xFF5B), (0xFF5D, 0xFF5D),
    (0xFF5F, 0xFF65), (0x10100, 0x10102), (0x1039F, 0x1039F), (0x103D0, 0x103D0),
    (0x1056F, 0x1056F), (0x10857, 0x10857), (0x1091F, 0x1091F), (0x1093F, 0x1093F),
    (0x10A50, 0x10A58), (0x10A7F, 0x10A7F), (0x10AF0, 0x10AF6), (0x10B39, 0x10B3F),
    (0x10B99, 0x10B9C), (0x10EAD, 0x10EAD), (0x10F55, 0x10F59), (0x10F86, 0x10F89),
    (0x11047, 0x1104D), (0x110BB, 0x110BC), (0x110BE, 0x110C1), (0x11140, 0x11143),
    (0x11174, 0x11175), (0x111C5, 0x111C8), (0x111CD, 0x111CD), (0x111DB, 0x111DB),
    (0x111DD, 0x111DF), (0x11238, 0x1123D), (0x112A9, 0x112A9), (0x1144B, 0x1144F),
    (0x1145A, 0x1145B), (0x1145D, 0x1145D), (0x114C6, 0x114C6), (0x115C1, 0x115D7),
    (0x11641, 0x11643), (0x11660, 0x1166C), (0x116B9, 0x116B9), (0x1173C, 0x1173E),
    (0x1183B, 0x1183B), (0x11944, 0x11946), (0x119E2, 0x119E2), (0x11A3F, 0x11A46),
    (0x11A9A, 0x11A9C), (0x11A9E, 0x11AA2), (0x11C41, 0x11C45), (0x11C70, 0x11C71),
    (0x11EF7, 0x11EF8), (0x11FFF, 0x11FFF), (0x12470, 0x12474), (0x12FF1, 0x12FF2),
    (0x16A6E, 0x16A6F), (0x16AF5, 0x16AF5), (0x16B37, 0x16B3B), (0x16B44, 0x16B44),
    (0x16E97, 0x16E9A), (0x16FE2, 0x16FE2), (0x1BC9F, 0x1BC9F), (0x1DA87, 0x1DA8B),
    (0x1E95E, 0x1E95F),
];
/// General category Mn.
#[rustfmt::skip]
const NONSPACING_MARKS: &[(u32, u32)] = &[
    (0x0300, 0x036F), (0x0483, 0x0487), (0x0591, 0x05BD), (0x05BF, 0x05BF),
    (0x05C1, 0x05C2), (0x05C4, 0x05C5), (0x05C7, 0x05C7), (0x0610, 0x061A),
    (0x064B, 0x065F), (0x0670, 0x0670), (0x06D6, 0x06DC), (0x06DF, 0x06E4),
    (0x06E7, 0x06E8), (0x06EA, 0x06ED), (0x0711, 0x0711), (0x0730, 0x074A),
    (0x07A6, 0x07B0), (0x07EB, 0x07F3), (0x07FD, 0x07FD), (0x0816, 0x0819),
    (0x081B, 0x0823), (0x0825, 0x0827), (0x0829, 0x082D), (0x0859, 0x085B),
    (0x0898, 0x089F), (0x08CA, 0x08E1), (0x08E3, 0x0902), (0x093A, 0x093A),
    (0x093C, 0x093C), (0x0941, 0x0948), (0x094D, 0x094D), (0x0951, 0x0957),
    (0x0962, 0x0963), (0x0981, 0x0981), (0x09BC, 0x09BC), (0x09C1, 0x09C4),
    (0x09CD, 0x09CD), (0x09E2, 0x09E3), (0x09FE, 0x09FE), (0x0A01, 0x0A02),
    (0x0A3C, 0x0A3C), (0x0A41, 0x0A42), (0x0A47, 0x0A48), (0x0A4B, 0x0A4D),
    (0x0A51, 0x0A51), (0x0A70, 0x0A71), (0x0A75, 0x0A75), (0x0A81, 0x0A82),
    (0x0ABC, 0x0ABC), (0x0AC1, 0x0AC5), (0x0AC7, 0x0AC8), (0x0ACD, 0x0ACD),
    (0x0AE2, 0x0AE3), (0x0AFA, 0x0AFF), (0x0B01, 0x0B01), (0x0B3C, 0x0B3C),
    (0x0B3F, 0x0B3F), (0x0B41, 0x0B44), (0x0B4D, 0x0B4D), (0x0B55, 0x0B56),
    (0x0B62, 0x0B63), (0x0B82, 0x0B82), (0x0BC0, 0x0BC0), (0x0BCD, 0x0BCD),
    (0x0C00, 0x0C00), (0x0C04, 0x0C04), (0x0C3C, 0x0C3C), (0x0C3E, 0x0C40),
    (0x0C46, 0x0C48), (0x0C4A, 0x0C4D), (0x0C55, 0x0C56), (0x0C62, 0x0C63),
    (0x0C81, 0x0C81), (0x0CBC, 0x0CBC), (0x0CBF, 0x0CBF), (0x0CC6, 0x0CC6),
    (0x0CCC, 0x0CCD), (0x0CE2, 0x0CE3), (0x0D00, 0x0D01), (0x0D3B, 0x0D3C),
    (0x0D41, 0x0D44), (0x0D4D, 0x0D4D), (0x0D62, 0x0D63), (0x0D81, 0x0D81),
    (0x0DCA, 0x0DCA), (0x0DD2, 0x0DD4), (0x0DD6, 0x0DD6), (0x0E31, 0x0E31),
    (0x0E34, 0x0E3A), (0x0E47, 0x0E4E), (0x0EB1, 0x0EB1), (0x0EB4, 0x0EBC),
    (0x0EC8, 0x0ECD), (0x0F18, 0x0F19), (0x0F35, 0x0F35), (0x0F37, 0x0F37),
    (0x0F39, 0x0F39), (0x0F71, 0x0F7E), (0x0F80, 0x0F84), (0x0F86, 0x0F87),
    (0x0F8D, 0x0F97), (0x0F99, 0x0FBC), (0x0FC6, 0x0FC6), (0x102D, 0x1030),
    (0x1032, 0x1037), (0x1039, 0x103A), (0x103D, 0x103E), (0x1058, 0x1059),
    (0x105E, 0x1060), (0x1071, 0x1074), (0x1082, 0x1082), (0x1085, 0x1086),
    (0x108D, 0x108D), (0x109D, 0x109D), (0x135D, 0x135F), (0x1712, 0x1714),
    (0x1732, 0x1733), (0x1752, 0x1753), (0x1772, 0x1773), (0x17B4, 0x17B5),
    (0x17B7, 0x17BD), (0x17C6, 0x17C6), (0x17C9, 0x17D3), (0x17DD, 0x17DD),
    (0x180B, 0x180D), (0x180F, 0x180F), (0x1885, 0x1886), (0x18A9, 0x18A9),
    (0x1920, 0x1922), (0x1927, 0x1928), (0x1932, 0x1932), (0x1939, 0x193B),
    (0x1A17, 0x1A18), (0x1A1B, 0x1A1B), (0x1A56, 0x1A56), (0x1A58, 0x1A5E),
    (0x1A60, 0x1A60), (0x1A62, 0x1A62), (0x1A65, 0x1A6C), (0x1A73, 0x1A7C),
    (0x1A7F, 0x1A7F), (0x1AB0, 0x1ABD), (0x1ABF, 0x1ACE), (0x1B00, 0x1B03),
    (0x1B34, 0x1B34), (0x1B36, 0x1B3A), (0x1B3C, 0x1B3C), (0x1B42, 0x1B42),
    (0x1B6B, 0x1B73), (0x1B80, 0x1B81), (0x1BA2, 0x1BA5), (0x1BA8, 0x1BA9),
    (0x1BAB, 0x1BAD), (0x1BE6, 0x1BE6), (0x1BE8, 0x1BE9), (0x1BED, 0x1BED),
    (0x1BEF, 0x1BF1), (0x1C2C, 0x1C33), (0x1C36, 0x1C37), (0x1CD0, 0x1CD2),
    (0x1CD4, 0x1CE0), (0x1CE2, 0x1CE8), (0x1CED, 0x1CED), (0x1CF4, 0x1CF4),
    (0x1CF8, 0x1CF9), (0x1DC0, 0x1DFF), (0x20D0, 0x20DC), (0x20E1, 0x20E1),
    (0x20E5, 0x20F0), (0x2CEF, 0x2CF1), (0x2D7F, 0x2D7F), (0x2DE0, 0x2DFF),
    (0x302A, 0x302D), (0x3099, 0x309A), (0xA66F, 0xA66F), (0xA674, 0xA67D),
    (0xA69E, 0xA69F), (0xA6F0, 0xA6F1), (0xA802, 0xA802), (0xA806, 0xA806),
    (0xA80B, 0xA80B), (0xA825, 0xA826), (0xA82C, 0xA82C), (0xA8C4, 0xA8C5),
    (0xA8E0, 0xA8F1), (0xA8FF, 0xA8FF), (0xA926, 0xA92D), (0xA947, 0xA951),
    (0xA980, 0xA982), (0xA9B3, 0xA9B3), (0xA9B6, 0xA9B9), (0xA9BC, 0xA9BD),
    (0xA9E5, 0xA9E5), (0xAA29, 0xAA2E), (0xAA31, 0xAA32), (0xAA35, 0xAA36),
    (0xAA43, 0xAA43), (0xAA4C, 0xAA4C), (0xAA7C, 0xAA7C), (0xAAB0, 0xAAB0),
    (0xAAB2, 0xAAB4), (0xAAB7, 0xAAB8), (0xAABE, 0xAABF), (0xAAC1, 0xAAC1),
    (0xAAEC, 0xAAED), (0xAAF6, 0xAAF6), (0xABE5, 0xABE5), (0xABE8, 0xABE8),
    (0xABED, 0xABED), (0xFB1E, 0xFB1E), (0xFE00, 0xFE0F), (0xFE20, 0xFE2F),
    (0x101FD, 0x101FD), (0x102E0, 0x102E0), (0x10376, 0x1037A), (0x10A01, 0x10A03),
    (0x10A05, 0x10A06), (0x10A0C, 0x10A0F), (0x10A38, 0x10A3A), (0x10A3F, 0x10A3F),
    (0x10AE5, 0x10AE6), (0x10D24, 0x10D27), (0x10EAB, 0x10EAC), (0x10F46, 0x10F50),
    (0x10F82, 0x10F85), (0x11001, 0x11001), (0x11038, 0x11046), (0x11070, 0x11070),
    (0x11073, 0x11074), (0x1107F, 0x11081), (0x110B3, 0x110B6), (0x110B9, 0x110BA),
    (0x110C2, 0x110C2), (0x11100, 0x11102), (0x11127, 0x1112B), (0x1112D, 0x11134),
    (0x11173, 0x11173), (0x11180, 0x11181), (0x111B6, 0x111BE), (0x111C9, 0x111CC),
    (0x111CF, 0x111CF), (0x1122F, 0x11231), (0x11234, 0x11234), (0x11236, 0x11237),
    (0x1123E, 0x1123E), (0x112DF, 0x112DF), (0x112E3, 0x112EA), (0x11300, 0x11301),
    (0x1133B, 0x1133C), (0x11340, 0x11340), (0x11366, 0x1136C), (0x11370, 0x11374),
    (0x11438, 0x1143F), (0x11442, 0x11444), (0x11446, 0x11446), (0x1145E, 0x1145E),
    (0x114B3, 0x114B8), (0x114BA, 0x114BA), (0x114BF, 0x114C0), (0x114C2, 0x114C3),
    (0x115B2, 0x115B5), (0x115BC, 0x115BD), (0x115BF, 0x115C0), (0x115DC, 0x115DD),
    (0x11633, 0x1163A), (0x1163D, 0x1163D), (0x1163F, 0x11640), (0x116AB, 0x116AB),
    (0x116AD, 0x116AD), (0x116B0, 0x116B5), (0x116B7, 0x116B7), (0x1171D, 0x1171F),
    (0x11722, 0x11725), (0x11727, 0x1172B), (0x1182F, 0x11837), (0x11839, 0x1183A),
    (0x1193B, 0x1193C), (0x1193E, 0x1193E), (0x11943, 0x11943), (0x119D4, 0x119D7),
    (0x119DA, 0x119DB), (0x119E0, 0x119E0), (0x11A01, 0x11A0A), (0x11A33, 0x11A38),
    (0x11A3B, 0x11A3E), (0x11A47, 0x11A47), (0x11A51, 0x11A56), (0x11A59, 0x11A5B),
    (0x11A8A, 0x11A96), (0x11A98, 0x11A99), (0x11C30, 0x11C36), (0x11C38, 0x11C3D),
    (0x11C3F, 0x11C3F), (0x11C92, 0x11CA7), (0x11CAA, 0x11CB0), (0x11CB2, 0x11CB3),
    (0x11CB5, 0x11CB6), (0x11D31, 0x11D36), (0x11D3A, 0x11D3A), (0x11D3C, 0x11D3D),
    (0x11D3F, 0x11D45), (0x11D47, 0x11D47), (0x11D90, 0x11D91), (0x11D95, 0x11D95),
    (0x11D97, 0x11D97), (0x11EF3, 0x11EF4), (0x16AF0, 0x16AF4), (0x16B30, 0x16B36),
    (0x16F4F, 0x16F4F), (0x16F8F, 0x16F92), (0x16FE4, 0x16FE4), (0x1BC9D, 0x1BC9E),
    (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1D167, 0x1D169), (0x1D17B, 0x1D182),
    (0x1D185, 0x1D18B), (0x1D1AA, 0x1D1AD), (0x1D242, 0x1D244), (0x1DA00, 0x1DA36),
    (0x1DA3B, 0x1DA6C), (0x1DA75, 0x1DA75), (0x1DA84, 0x1DA84), (0x1DA9B, 0x1DA9F),
    (0x1DAA1, 0x1DAAF), (0x1E000, 0x1E006), (0x1E008, 0x1E018), (0x1E01B, 0x1E021),
    (0x1E023, 0x1E024), (0x1E026, 0x1E02A), (0x1E130, 0x1E136), (0x1E2AE, 0x1E2AE),
    (0x1E2EC, 0x1E2EF), (0x1E8D0, 0x1E8D6), (0x1E944, 0x1E94A), (0xE0100, 0xE01EF),
];
/// General categories Cf and Co.
#[rustfmt::skip]
const FORMAT_OR_PRIVATE: &[(u32, u32)] = &[
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xE000, 0xF8FF), (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD),
    (0x110CD, 0x110CD), (0x13430, 0x13438), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001), (0xE0020, 0xE007F), (0xF0000, 0xFFFFD), (0x100000, 0x10FFFD),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(max_len: usize) -> Tokenizer {
        let vocab =
            "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nun\n##set\npay\n##ment\n_\nmode\ncafe\n.\n";
        Tokenizer::from_vocab(vocab, max_len).expect("tiny vocabulary")
    }

    #[test]
    fn normalizes_like_bert() {
        assert_eq!(normalize("Crème Brûlée"), "creme brulee");
        assert_eq!(
            normalize("a\tb\u{3000}c\u{0}d\u{FFFD}e\u{200B}f"),
            "a b cdef"
        );
        assert_eq!(normalize("東京x"), " 東  京 x");
    }

    #[test]
    fn splits_punctuation_into_words() {
        let words: Vec<_> = pre_tokenize("it's  PAYMENT_MODE…ok!").collect();
        assert_eq!(
            words,
            ["it", "'", "s", "PAYMENT", "_", "MODE", "…", "ok", "!"]
        );
    }

    #[test]
    fn word_pieces_and_unknowns() {
        let t = tiny(16);
        assert_eq!(
            t.encode("Unset payment_MODE café."),
            [2, 5, 6, 7, 8, 9, 10, 11, 12, 3]
        );
        // "unpay" has no full split ("##pay" is missing): the whole word is one [UNK].
        assert_eq!(t.encode("unpay"), [2, 1, 3]);
        assert_eq!(t.encode(""), [2, 3]);
    }

    #[test]
    fn special_tokens_in_text_are_kept() {
        assert_eq!(
            tiny(16).encode("un[SEP]set [sep]"),
            [2, 5, 3, 1, 1, 1, 1, 3]
        );
    }

    #[test]
    fn truncates_to_max_len() {
        assert_eq!(tiny(4).encode("un un un un"), [2, 5, 5, 3]);
        assert_eq!(tiny(4).encode("payment"), [2, 7, 8, 3]);
        assert_eq!(tiny(3).encode("payment"), [2, 7, 3]);
    }
}
