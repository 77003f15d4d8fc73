//! Parse: YAML text → a `serde_yaml` value, within bounds. Every YAML file the
//! crate reads (`native_functions.yaml`, `tags.yaml`, `deprecated.yaml`) comes
//! through [`parse`].
//!
//! # The YAML library
//!
//! The files are read by `serde_yaml` 0.9 (libyaml's scanner and parser,
//! translated to Rust by `unsafe-libyaml`). Its author has marked it deprecated:
//! it gets no more releases. It stays, because it is complete for what these files
//! use, its error messages and positions are libyaml's (the diagnostics and their
//! tests build on them), and the alternatives do not remove the reason to bound
//! the input: `serde_norway` and `serde_yml` are forks over the same translated
//! libyaml; `yaml-rust2`/`saphyr` are pure Rust but have no serde values, other
//! messages, and a scanner of the same design. libyaml's one weakness that
//! matters here is nesting: each token costs time proportional to the number of
//! open flow collections (`[`, `{`), so 100 KB of `[` took 4.4 s, and 200 KB
//! 36.5 s, before serde_yaml reported its recursion limit.
//!
//! So the input is bounded before libyaml sees it:
//! - at most [`MAX_FILE_BYTES`] bytes;
//! - at most [`MAX_YAML_DEPTH`] nested collections, block or flow, checked by a
//!   linear pre-scan ([`Scan`]) that reproduces where libyaml's scanner starts
//!   and ends its tokens (plain, quoted and block scalars, comments, anchors,
//!   tags, indentation), so that brackets inside strings and comments do not
//!   count and every bracket libyaml would open does. It stops at the first
//!   collection past the limit and names its line and column. (A fuzz target
//!   checks it against libyaml's own token stream.)
//! - one document: a file with document markers (`---`, `...`, `%` directives) is
//!   never parsed in parts, so the answer does not depend on the file's size.

use crate::diag::Diagnostic;
use serde_yaml::Value;

/// The largest YAML file read, in bytes: 16 MiB. PyTorch's own
/// `native_functions.yaml` is about 0.6 MB (2,590 entries); a file 25 times
/// larger is still read in seconds, while a 100 MB one took 56 s and 4.1 GB.
pub const MAX_FILE_BYTES: usize = 16 << 20;

/// The deepest nesting of YAML collections (block or flow) a file may have.
/// A schema file nests four (the list of entries, an entry, its `dispatch:`
/// table, a list inside it); 32 leaves room and keeps libyaml linear and
/// serde_yaml far from its own recursion limit (128).
pub const MAX_YAML_DEPTH: usize = 32;

/// Files smaller than this are parsed in one piece (splitting costs more than
/// it saves).
const MIN_SPLIT: usize = 64 * 1024;

/// Reads a YAML file of at most [`MAX_FILE_BYTES`] (the size is checked before
/// the file is read). I/O errors are a diagnostic at line 0.
pub fn read(path: &std::path::Path) -> Result<String, Diagnostic> {
    use std::io::Read;
    let file = path.display().to_string();
    let cannot = |e: std::io::Error| Diagnostic::new(&file, 0, format!("cannot read: {e}"));
    let f = std::fs::File::open(path).map_err(cannot)?;
    let len = f.metadata().map_err(cannot)?.len();
    if len > MAX_FILE_BYTES as u64 {
        return Err(too_big(&file, len));
    }
    let mut text = String::with_capacity(len as usize);
    // `take`: a file that grows while it is read still stops at the limit + 1.
    f.take(MAX_FILE_BYTES as u64 + 1)
        .read_to_string(&mut text)
        .map_err(cannot)?;
    if text.len() > MAX_FILE_BYTES {
        return Err(too_big(&file, text.len() as u64));
    }
    Ok(text)
}

fn too_big(file: &str, len: u64) -> Diagnostic {
    Diagnostic::new(
        file,
        0,
        format!(
            "the file is {len} bytes, more than the limit of {MAX_FILE_BYTES} bytes ({} MiB)",
            MAX_FILE_BYTES >> 20
        ),
    )
    .help(
        "PyTorch's own native_functions.yaml is about 0.6 MB; split the schema into several crates",
    )
}

/// Parses YAML text (a leading byte-order mark already removed) after checking
/// its size and nesting. A large file that is one block sequence without
/// document markers is parsed in two halves on two threads (YAML parsing is most
/// of the load time); whenever that could differ from one parse, it is parsed
/// whole, so results and error positions are always those of a single parse.
pub fn parse(file: &str, src: &str) -> Result<Value, Diagnostic> {
    if src.len() > MAX_FILE_BYTES {
        return Err(too_big(file, src.len() as u64));
    }
    let scan = Scan::run(src).map_err(|(line, column)| {
        Diagnostic::new(
            file,
            line,
            format!("YAML nested deeper than {MAX_YAML_DEPTH} levels"),
        )
        .column(column)
        .help("a schema file nests a few levels (entries, their keys, a dispatch table or a list); flatten the value")
    })?;
    if !scan.document_markers {
        if let Some(items) = parse_in_parts(src) {
            return Ok(Value::Sequence(items));
        }
    }
    serde_yaml::from_str(src).map_err(|e| yaml_error(file, src, &e))
}

/// Parses a large block sequence in two halves on two threads, split at a line
/// starting with `- ` in column 1 (a top-level entry: nothing nested can start
/// there). `None` (parse the whole text instead) for a small file, one that is
/// not such a sequence, or if either half does not parse as a sequence on its own
/// (an alias across the split, a syntax error, a split inside a scalar). The
/// caller has made sure there are no document markers, so two halves that parse
/// are the one document the whole text is.
fn parse_in_parts(src: &str) -> Option<Vec<Value>> {
    if src.len() < MIN_SPLIT
        || (!src.starts_with("- ") && !src.contains("\n- "))
        || std::thread::available_parallelism().map_or(1, usize::from) < 2
    {
        return None;
    }
    let mid = src.len() / 2;
    let split = mid + src.get(mid..)?.find("\n- ")? + 1;
    let (a, b) = src.split_at(split);
    let parse = |part: &str| match serde_yaml::from_str::<Value>(part) {
        Ok(Value::Sequence(items)) => Some(items),
        _ => None,
    };
    let (first, second) = std::thread::scope(|s| {
        let h = s.spawn(|| parse(b));
        (parse(a), h.join().ok().flatten())
    });
    let mut items = first?;
    items.extend(second?);
    Some(items)
}

/// What the pre-scan found in a text that is within the nesting limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// The deepest nesting of collections seen (block and flow).
    pub max_depth: usize,
    /// The deepest nesting of flow collections (`[`, `{`) seen.
    pub max_flow_depth: usize,
    /// A `---` or `...` marker or a `%` directive was seen.
    pub document_markers: bool,
}

/// Where libyaml would stop with an error: the pre-scan stops there too (what
/// follows is never parsed), and serde_yaml reports the error.
struct Stop;

/// A simple key candidate of the block context (libyaml's `simple_keys[0]`):
/// where a token that may turn out to be a mapping key starts.
#[derive(Clone, Copy)]
struct Key {
    column: usize,
    line: usize,
    index: usize,
}

/// The scanner: libyaml's token boundaries, without building tokens. Positions
/// count characters as libyaml does (`index`, `column`), lines from 1.
struct Scanner<'a> {
    s: &'a [u8],
    /// Byte offset.
    at: usize,
    /// Character index, line (1-based) and column (0-based), as libyaml counts.
    index: usize,
    line: usize,
    column: usize,
    flow: usize,
    /// The current block indentation (-1 outside any block collection) and the
    /// enclosing ones.
    indent: isize,
    indents: Vec<isize>,
    simple_key_allowed: bool,
    /// The block context's simple key, while one is possible.
    key: Option<Key>,
    scan: Scan,
    /// Where the nesting went past the limit: (line, 1-based column).
    too_deep: Option<(usize, usize)>,
}

impl Scan {
    /// Scans `src`; `Err((line, column))` of the first collection nested deeper
    /// than [`MAX_YAML_DEPTH`]. Linear in the length of the text.
    pub fn run(src: &str) -> Result<Scan, (usize, usize)> {
        // A byte-order mark at the very start is the reader's (it takes no column).
        let bom = if src.starts_with('\u{feff}') { 3 } else { 0 };
        let mut sc = Scanner {
            s: src.as_bytes(),
            at: bom,
            index: 0,
            line: 1,
            column: 0,
            flow: 0,
            indent: -1,
            indents: Vec::new(),
            simple_key_allowed: true,
            key: None,
            scan: Scan::default(),
            too_deep: None,
        };
        let _ = sc.tokens();
        match sc.too_deep {
            Some(at) => Err(at),
            None => Ok(sc.scan),
        }
    }
}

/// A table of the ASCII bytes in `stops`.
const fn table(stops: &[u8]) -> [bool; 128] {
    let mut t = [false; 128];
    let mut i = 0;
    while i < stops.len() {
        t[stops[i] as usize] = true;
        i += 1;
    }
    t
}

/// Where a plain scalar's fast path stops, in block and in flow context; where
/// a quoted scalar's does; where a line does.
const PLAIN_BLOCK: [bool; 128] = table(b"\r\n:#");
const PLAIN_FLOW: [bool; 128] = table(b"\r\n:#,[]{}");
const QUOTED: [bool; 128] = table(b" \t\r\n'\"\\");
const LINE: [bool; 128] = table(b"\r\n");

fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

impl Scanner<'_> {
    fn peek(&self, k: usize) -> u8 {
        self.s.get(self.at + k).copied().unwrap_or(0)
    }

    fn eof(&self) -> bool {
        self.at >= self.s.len()
    }

    /// The length in bytes of a line break at `at + k` (LF, CR, CRLF, NEL, LS,
    /// PS), 0 if there is none.
    fn break_len(&self, k: usize) -> usize {
        match (self.peek(k), self.peek(k + 1), self.peek(k + 2)) {
            (b'\r', b'\n', _) => 2,
            (b'\r' | b'\n', _, _) => 1,
            (0xC2, 0x85, _) => 2,
            (0xE2, 0x80, 0xA8 | 0xA9) => 3,
            _ => 0,
        }
    }

    fn is_break(&self, k: usize) -> bool {
        self.break_len(k) > 0
    }

    fn is_blank(&self, k: usize) -> bool {
        matches!(self.peek(k), b' ' | b'\t')
    }

    /// Blank, line break or the end of the text.
    fn is_blankz(&self, k: usize) -> bool {
        self.is_blank(k) || self.is_break(k) || self.at + k >= self.s.len()
    }

    /// Skips one character (not a line break).
    fn skip(&mut self) {
        if self.eof() {
            return;
        }
        let c = self.s[self.at];
        let width = match c {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        self.at = (self.at + width).min(self.s.len());
        self.index += 1;
        self.column += 1;
    }

    /// Skips ASCII bytes that are not `stops` (the hot path: most of a file
    /// is plain text), stopping before anything else.
    fn skip_ascii(&mut self, stops: &[bool; 128]) {
        let start = self.at;
        while let Some(&c) = self.s.get(self.at) {
            if c >= 0x80 || stops[c as usize] {
                break;
            }
            self.at += 1;
        }
        let n = self.at - start;
        self.index += n;
        self.column += n;
    }

    /// Skips a line break (one character for libyaml, CRLF included).
    fn skip_line(&mut self) {
        let n = self.break_len(0);
        if n == 0 {
            self.skip();
            return;
        }
        self.at += n;
        self.index += if n == 2 && self.s[self.at - 2] == b'\r' {
            2
        } else {
            1
        };
        self.line += 1;
        self.column = 0;
    }

    /// Skips to the line break (or the end).
    fn skip_rest_of_line(&mut self) {
        loop {
            self.skip_ascii(&LINE);
            if self.eof() || self.is_break(0) {
                return;
            }
            self.skip();
        }
    }

    fn depth(&self) -> usize {
        self.indents.len() + self.flow
    }

    /// Records the depth; past the limit, the place of the current token.
    fn deeper(&mut self) -> Result<(), Stop> {
        let d = self.depth();
        self.scan.max_depth = self.scan.max_depth.max(d);
        self.scan.max_flow_depth = self.scan.max_flow_depth.max(self.flow);
        if d > MAX_YAML_DEPTH {
            self.too_deep = Some((self.line, self.column + 1));
            return Err(Stop);
        }
        Ok(())
    }

    fn roll_indent(&mut self, column: usize) -> Result<(), Stop> {
        if self.flow == 0 && self.indent < column as isize {
            self.indents.push(self.indent);
            self.indent = column as isize;
            self.deeper()?;
        }
        Ok(())
    }

    fn unroll_indent(&mut self, column: isize) {
        if self.flow != 0 {
            return;
        }
        while self.indent > column {
            self.indent = self.indents.pop().unwrap_or(-1);
        }
    }

    fn save_simple_key(&mut self) {
        if self.flow == 0 && self.simple_key_allowed {
            self.key = Some(Key {
                column: self.column,
                line: self.line,
                index: self.index,
            });
        }
    }

    fn remove_simple_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    fn stale_simple_keys(&mut self) {
        if let Some(k) = self.key {
            if k.line < self.line || k.index + 1024 < self.index {
                self.key = None;
            }
        }
    }

    /// libyaml's `scan_to_next_token`: blanks, comments and line breaks.
    fn scan_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.s[self.at..].starts_with("\u{feff}".as_bytes()) {
                self.skip();
            }
            while self.peek(0) == b' '
                || ((self.flow != 0 || !self.simple_key_allowed) && self.peek(0) == b'\t')
            {
                self.skip();
            }
            if self.peek(0) == b'#' {
                self.skip_rest_of_line();
            }
            if !self.is_break(0) {
                break;
            }
            self.skip_line();
            if self.flow == 0 {
                self.simple_key_allowed = true;
            }
        }
    }

    fn document_indicator(&self, c: u8) -> bool {
        self.column == 0
            && self.peek(0) == c
            && self.peek(1) == c
            && self.peek(2) == c
            && self.is_blankz(3)
    }

    /// libyaml's `fetch_next_token`, for every token.
    fn tokens(&mut self) -> Result<(), Stop> {
        loop {
            self.scan_to_next_token();
            self.stale_simple_keys();
            self.unroll_indent(self.column as isize);
            if self.eof() {
                return Ok(());
            }
            let c = self.peek(0);
            if self.column == 0 && c == b'%' {
                // A directive: its line, line break included (so a key is not
                // allowed at the start of the next line).
                self.scan.document_markers = true;
                self.unroll_indent(-1);
                self.remove_simple_key();
                self.simple_key_allowed = false;
                self.skip_rest_of_line();
                if self.is_break(0) {
                    self.skip_line();
                }
                continue;
            }
            if self.document_indicator(b'-') || self.document_indicator(b'.') {
                self.scan.document_markers = true;
                self.unroll_indent(-1);
                self.remove_simple_key();
                self.simple_key_allowed = false;
                for _ in 0..3 {
                    self.skip();
                }
                continue;
            }
            let flow = self.flow != 0;
            match c {
                b'[' | b'{' => {
                    self.save_simple_key();
                    self.flow += 1;
                    self.deeper()?;
                    self.simple_key_allowed = true;
                    self.skip();
                }
                b']' | b'}' => {
                    self.remove_simple_key();
                    self.flow = self.flow.saturating_sub(1);
                    self.simple_key_allowed = false;
                    self.skip();
                }
                b',' => {
                    self.remove_simple_key();
                    self.simple_key_allowed = true;
                    self.skip();
                }
                b'-' if self.is_blankz(1) => {
                    if !flow {
                        if !self.simple_key_allowed {
                            return Err(Stop);
                        }
                        self.roll_indent(self.column)?;
                    }
                    self.remove_simple_key();
                    self.simple_key_allowed = true;
                    self.skip();
                }
                b'?' if flow || self.is_blankz(1) => {
                    if !flow {
                        if !self.simple_key_allowed {
                            return Err(Stop);
                        }
                        self.roll_indent(self.column)?;
                    }
                    self.remove_simple_key();
                    self.simple_key_allowed = !flow;
                    self.skip();
                }
                b':' if flow || self.is_blankz(1) => {
                    // In a flow collection the key is the collection's own, and
                    // indentation does not change.
                    let key = if flow { None } else { self.key.take() };
                    match key {
                        Some(k) => {
                            self.roll_indent(k.column)?;
                            self.simple_key_allowed = false;
                        }
                        None => {
                            if !flow {
                                if !self.simple_key_allowed {
                                    return Err(Stop);
                                }
                                self.roll_indent(self.column)?;
                            }
                            self.simple_key_allowed = !flow;
                        }
                    }
                    self.skip();
                }
                b'*' | b'&' => {
                    self.save_simple_key();
                    self.simple_key_allowed = false;
                    self.skip();
                    let start = self.at;
                    while is_alpha(self.peek(0)) {
                        self.skip();
                    }
                    let next = self.peek(0);
                    if self.at == start || !(self.is_blankz(0) || b"?:,]}%@`".contains(&next)) {
                        return Err(Stop);
                    }
                }
                b'!' => {
                    self.save_simple_key();
                    self.simple_key_allowed = false;
                    self.tag()?;
                }
                b'|' | b'>' if !flow => {
                    self.remove_simple_key();
                    self.simple_key_allowed = true;
                    self.block_scalar()?;
                }
                b'\'' | b'"' => {
                    self.save_simple_key();
                    self.simple_key_allowed = false;
                    self.flow_scalar(c == b'\'')?;
                }
                _ => {
                    let plain_start = !(self.is_blankz(0) || b"-?:,[]{}#&*!|>'\"%@`".contains(&c))
                        || (c == b'-' && !self.is_blank(1))
                        || (!flow && (c == b'?' || c == b':') && !self.is_blankz(1));
                    if !plain_start {
                        return Err(Stop);
                    }
                    self.save_simple_key();
                    self.simple_key_allowed = false;
                    if self.plain_scalar()? {
                        self.simple_key_allowed = true;
                    }
                }
            }
        }
    }

    /// A tag: `!<uri>`, `!handle!suffix`, `!suffix`.
    fn tag(&mut self) -> Result<(), Stop> {
        let uri_char = |c: u8, verbatim: bool| {
            is_alpha(c) || b";/?:@&=+$.%!~*'()".contains(&c) || (verbatim && b",[]".contains(&c))
        };
        if self.peek(1) == b'<' {
            self.skip();
            self.skip();
            while uri_char(self.peek(0), true) {
                self.skip();
            }
            if self.peek(0) != b'>' {
                return Err(Stop);
            }
            self.skip();
        } else {
            // The handle (`!`, `!!`, `!name!`), then the suffix.
            self.skip();
            while is_alpha(self.peek(0)) {
                self.skip();
            }
            if self.peek(0) == b'!' {
                self.skip();
            }
            while uri_char(self.peek(0), false) {
                self.skip();
            }
        }
        if !self.is_blankz(0) && (self.flow == 0 || self.peek(0) != b',') {
            return Err(Stop);
        }
        Ok(())
    }

    /// A plain scalar; true if it ended after line breaks (a key may follow).
    ///
    /// libyaml reads it word by word; what matters for where tokens start is
    /// only where it ends: at `: ` (or `:` before a line break), at ` #`, at a
    /// flow indicator inside a flow collection, or at a line less indented than
    /// the block (or a document marker) after a line break. So each line is
    /// scanned for those bytes alone.
    fn plain_scalar(&mut self) -> Result<bool, Stop> {
        let indent = self.indent + 1;
        let flow = self.flow != 0;
        let stops = if flow { &PLAIN_FLOW } else { &PLAIN_BLOCK };
        let mut leading_blanks = false;
        'scalar: loop {
            if self.document_indicator(b'-') || self.document_indicator(b'.') {
                break;
            }
            if self.peek(0) == b'#' {
                break;
            }
            // The rest of this line.
            loop {
                let from = self.at;
                self.skip_ascii(stops);
                if self.at > from {
                    leading_blanks = false;
                }
                if self.eof() || self.is_break(0) {
                    break;
                }
                let (c, next) = (self.peek(0), self.peek(1));
                match c {
                    b':' if flow && b",?[]{}".contains(&next) => return Err(Stop),
                    b':' if self.is_blankz(1) => break 'scalar,
                    b'#' if matches!(self.s[self.at - 1], b' ' | b'\t') => break 'scalar,
                    b',' | b'[' | b']' | b'{' | b'}' if flow => break 'scalar,
                    _ => {
                        leading_blanks = false;
                        self.skip();
                    }
                }
            }
            if self.eof() {
                break;
            }
            // Line breaks and the next line's indentation.
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    if leading_blanks && (self.column as isize) < indent && self.peek(0) == b'\t' {
                        return Err(Stop);
                    }
                    self.skip();
                } else {
                    self.skip_line();
                    leading_blanks = true;
                }
            }
            if !flow && (self.column as isize) < indent {
                break;
            }
        }
        Ok(leading_blanks)
    }

    /// A quoted scalar, to its closing quote.
    fn flow_scalar(&mut self, single: bool) -> Result<(), Stop> {
        let quote = if single { b'\'' } else { b'"' };
        self.skip();
        loop {
            if self.document_indicator(b'-') || self.document_indicator(b'.') || self.eof() {
                return Err(Stop);
            }
            while !self.is_blankz(0) {
                self.skip_ascii(&QUOTED);
                if self.is_blankz(0) {
                    break;
                }
                let (c, next) = (self.peek(0), self.peek(1));
                if single && c == b'\'' && next == b'\'' {
                    self.skip();
                    self.skip();
                } else if c == quote {
                    break;
                } else if !single && c == b'\\' && self.is_break(1) {
                    self.skip();
                    self.skip_line();
                    break;
                } else if !single && c == b'\\' {
                    let hex = match next {
                        b'0' | b'a' | b'b' | b't' | b'\t' | b'n' | b'v' | b'f' | b'r' | b'e'
                        | b' ' | b'"' | b'/' | b'\'' | b'\\' | b'N' | b'_' | b'L' | b'P' => 0,
                        b'x' => 2,
                        b'u' => 4,
                        b'U' => 8,
                        _ => return Err(Stop),
                    };
                    self.skip();
                    self.skip();
                    for _ in 0..hex {
                        if !self.peek(0).is_ascii_hexdigit() {
                            return Err(Stop);
                        }
                        self.skip();
                    }
                } else {
                    self.skip();
                }
            }
            if self.peek(0) == quote {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    self.skip();
                } else {
                    self.skip_line();
                }
            }
        }
        self.skip();
        Ok(())
    }

    /// A literal or folded block scalar: its header, then the lines indented
    /// at least as far as its content.
    fn block_scalar(&mut self) -> Result<(), Stop> {
        self.skip();
        // At most one chomping indicator and one indentation digit, in either order.
        let (mut chomping, mut increment) = (false, 0);
        for _ in 0..2 {
            match self.peek(0) {
                b'+' | b'-' if !chomping => {
                    chomping = true;
                    self.skip();
                }
                b'0' if increment == 0 => return Err(Stop),
                d @ b'1'..=b'9' if increment == 0 => {
                    increment = (d - b'0') as isize;
                    self.skip();
                }
                _ => break,
            }
        }
        while self.is_blank(0) {
            self.skip();
        }
        if self.peek(0) == b'#' {
            while !self.eof() && !self.is_break(0) {
                self.skip();
            }
        }
        if !self.is_blankz(0) {
            return Err(Stop);
        }
        if self.is_break(0) {
            self.skip_line();
        }
        let mut indent = if increment == 0 {
            0
        } else if self.indent >= 0 {
            self.indent + increment
        } else {
            increment
        };
        self.block_scalar_breaks(&mut indent)?;
        while self.column as isize == indent && !self.eof() {
            while !self.eof() && !self.is_break(0) {
                self.skip();
            }
            if self.eof() {
                break;
            }
            self.skip_line();
            self.block_scalar_breaks(&mut indent)?;
        }
        Ok(())
    }

    /// Empty lines of a block scalar; fixes its indentation on the first
    /// content line when no indicator gave it.
    fn block_scalar_breaks(&mut self, indent: &mut isize) -> Result<(), Stop> {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || (self.column as isize) < *indent) && self.peek(0) == b' ' {
                self.skip();
            }
            max_indent = max_indent.max(self.column as isize);
            if (*indent == 0 || (self.column as isize) < *indent) && self.peek(0) == b'\t' {
                return Err(Stop);
            }
            if !self.is_break(0) {
                break;
            }
            self.skip_line();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent + 1).max(1);
        }
        Ok(())
    }
}

/// The hint for a misindented line.
const INDENT_HELP: &str = "check the indentation: an entry's keys line up under `func:` (two spaces in), and dispatch rows are indented under `dispatch:`";

/// A YAML syntax error at YAML's own line and column, with a hint for the usual
/// mistakes.
pub(crate) fn yaml_error(file: &str, src: &str, e: &serde_yaml::Error) -> Diagnostic {
    let mut msg = e.to_string();
    let (mut line, mut col) = match e.location() {
        Some(l) => {
            // The position is printed in front already; keep only the context's.
            let at = format!(" at line {} column {}", l.line(), l.column());
            if let Some(i) = msg.find(&at) {
                msg.replace_range(i..i + at.len(), "");
            }
            (l.line(), Some(l.column()))
        }
        None => (0, None),
    };
    let lines: Vec<&str> = src.lines().collect();
    let text = |l: usize| {
        l.checked_sub(1)
            .and_then(|i| lines.get(i))
            .copied()
            .unwrap_or("")
    };
    let indent = |t: &str| t.len() - t.trim_start_matches(' ').len();
    let help = if text(line).contains('\t') && msg.contains("tab") {
        "YAML does not allow tabs for indentation; indent with spaces"
    } else if msg.contains("while scanning a quoted scalar") {
        "a quoted value must end with the same quote; check for a missing closing quote"
    } else if msg.contains("did not find expected ',' or ']'")
        || msg.contains("did not find expected ',' or '}'")
    {
        "a `[` list or `{` mapping must be closed; check for a missing `]` or `}`"
    } else if msg.contains("mapping values are not allowed") {
        // An unquoted `: ` inside a value, or a misindented key?
        let t = text(line);
        let in_value =
            parse_key(t).is_some_and(|k| col.is_some_and(|c| c > char_col(t, k.value_at - 1)));
        if in_value {
            "a value that contains `: ` or ends with `:` must be quoted"
        } else {
            INDENT_HELP
        }
    } else if msg.contains("did not find expected key")
        || msg.contains("did not find expected '-'")
        || msg.contains("block sequence entries are not allowed")
    {
        INDENT_HELP
    } else if let Some(key) = msg
        .split_once("duplicate entry with key \"")
        .and_then(|(_, k)| k.strip_suffix('"'))
    {
        // serde_yaml points at the start of the mapping; point at the second key.
        let key = key.to_string();
        let map_at = col.map_or(0, |c| c - 1);
        let mut found = Vec::new();
        for l in line..=lines.len() {
            let t = text(l);
            if l > line
                && !t.trim().is_empty()
                && !t.trim_start().starts_with('#')
                && indent(t) < map_at
            {
                break;
            }
            if let Some(k) = parse_key(t).filter(|k| k.at == map_at && k.key == key) {
                found.push((l, char_col(t, k.at)));
            }
        }
        msg = format!("duplicate key `{key}`");
        if let [(first, _), (dup, dup_col), ..] = found[..] {
            msg.push_str(&format!(" (first at line {first})"));
            line = dup;
            col = Some(dup_col);
        }
        "each key may appear only once per entry, and each dispatch key once per table"
    } else if msg.contains("more than one document") {
        let start = first_content_line(src);
        let marker = |l: usize| text(l).starts_with("---") || text(l).starts_with("...");
        if let Some(l) = (start + 1..=lines.len()).find(|&l| marker(l)) {
            line = l;
        }
        "a schema file is one YAML document; remove the `---` or `...` line"
    } else {
        ""
    };
    let mut d = Diagnostic::new(file, line, format!("malformed YAML: {msg}")).maybe_column(col);
    d.help = (!help.is_empty()).then(|| help.to_string());
    d
}

/// The first line that holds something other than blanks, comments or `---`.
pub(crate) fn first_content_line(src: &str) -> usize {
    src.lines()
        .position(|l| {
            let t = l.trim();
            !t.is_empty() && !t.starts_with('#') && t != "---"
        })
        .map_or(1, |i| i + 1)
}

/// A `key: value` line, as found by [`parse_key`].
pub(crate) struct KeyLine<'a> {
    /// Byte offset of the key (after indentation and a leading `- `).
    pub(crate) at: usize,
    /// The key, without quotes.
    pub(crate) key: &'a str,
    /// Byte offset just after the `:`.
    pub(crate) value_at: usize,
}

/// Splits `  [- ]key: value` into its key and where the value starts.
pub(crate) fn parse_key(line: &str) -> Option<KeyLine<'_>> {
    let b = line.as_bytes();
    let skip = |mut i: usize| {
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        i
    };
    let mut i = skip(0);
    if i < b.len() && b[i] == b'-' && (i + 1 == b.len() || b[i + 1] == b' ') {
        i = skip(i + 1);
    }
    if i >= b.len() || b[i] == b'#' {
        return None;
    }
    let (key, after) = if b[i] == b'"' || b[i] == b'\'' {
        let close = i + 1 + line[i + 1..].find(b[i] as char)?;
        (&line[i + 1..close], skip(close + 1))
    } else {
        let mut j = i;
        let colon = loop {
            let c = j + line[j..].find(':')?;
            if c + 1 == b.len() || b[c + 1] == b' ' {
                break c;
            }
            j = c + 1;
        };
        (line[i..colon].trim_end(), colon)
    };
    (after < b.len() && b[after] == b':').then_some(KeyLine {
        at: i,
        key,
        value_at: after + 1,
    })
}

/// 1-based character column of byte offset `at` in `line`.
pub(crate) fn char_col(line: &str, at: usize) -> usize {
    line.get(..at).map_or(at, |p| p.chars().count()) + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth(src: &str) -> Result<(usize, usize), (usize, usize)> {
        Scan::run(src).map(|s| (s.max_depth, s.max_flow_depth))
    }

    #[test]
    fn counts_what_libyaml_opens() {
        assert_eq!(depth("- a\n"), Ok((1, 0)));
        assert_eq!(depth("- func: f\n  tags: [core, pointwise]\n"), Ok((3, 1)));
        assert_eq!(depth("- func: f\n  dispatch:\n    CPU: k\n"), Ok((3, 0)));
        assert_eq!(depth("a: {b: [c, {d: e}]}\n"), Ok((4, 3)));
        assert_eq!(depth("- - - x\n"), Ok((3, 0)));
        // Inside scalars and comments nothing opens.
        assert_eq!(depth("- 'a[[[' # [[[\n- \"[{\\\"[\"\n- a[[b\n"), Ok((1, 0)));
        assert_eq!(depth("- |\n  [[[\n  {{\n- x\n"), Ok((1, 0)));
        assert_eq!(depth("a: b\n  [[[ c\n"), Ok((1, 0)));
        // A tag or anchor before a collection.
        assert_eq!(depth("a: !t &x [[1]]\n"), Ok((3, 2)));
    }

    #[test]
    fn stops_at_the_first_collection_past_the_limit() {
        let n = MAX_YAML_DEPTH + 5;
        let src = format!("x: {}\n", "[".repeat(n));
        // `x:` opens the mapping: depth 1; bracket k opens depth k + 1.
        assert_eq!(depth(&src), Err((1, 4 + MAX_YAML_DEPTH - 1)));
        let src = format!("{}x\n", "- ".repeat(n));
        assert_eq!(depth(&src), Err((1, 2 * MAX_YAML_DEPTH + 1)));
        // Spread over lines, in mappings.
        let src = format!("x: {}", "{a:\n".repeat(n));
        assert!(depth(&src).is_err());
    }

    #[test]
    fn a_leading_byte_order_mark_takes_no_column() {
        // Found by the yaml_prescan fuzz target: the directive is in column 0.
        let src = "\u{feff}%YAML 1.1\n---\n- a: [0, {b: [1]}]\n";
        assert_eq!(depth(src), Ok((5, 3)));
    }

    #[test]
    fn a_directive_takes_its_line_break() {
        // Found by the yaml_prescan fuzz target: after a directive's line, a tab
        // is still skipped before the next token.
        let src = "%YAML 1.1\n\t!str [1, {b: c}]\n";
        assert_eq!(depth(src), Ok((2, 2)));
    }

    #[test]
    fn sees_document_markers() {
        assert!(Scan::run("- a\n...\n- b\n").unwrap().document_markers);
        assert!(Scan::run("%YAML 1.1\n---\n- a\n").unwrap().document_markers);
        assert!(
            !Scan::run("- a\n- '...'\n- b ---\n")
                .unwrap()
                .document_markers
        );
    }
}
