//! Diagnostics: every problem found in a schema file, with its place.

use std::fmt;

/// One problem in a schema file: where it is, which entry, what is wrong, how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as given by the caller (printed as is).
    pub file: String,
    /// 1-based line (0 when the problem concerns the whole file).
    pub line: usize,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// The entry (`name.overload`), when the problem belongs to one.
    pub entry: Option<String>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something useful to say.
    pub help: Option<String>,
}

impl Diagnostic {
    /// A diagnostic at `file:line` with no entry, column or help.
    pub fn new(file: &str, line: usize, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            file: file.to_string(),
            line,
            column: None,
            entry: None,
            message: message.into(),
            help: None,
        }
    }

    /// Names the entry the problem belongs to.
    pub fn entry(mut self, entry: impl Into<String>) -> Diagnostic {
        self.entry = Some(entry.into());
        self
    }

    /// Sets the column.
    pub fn column(mut self, column: usize) -> Diagnostic {
        self.column = Some(column);
        self
    }

    /// Sets the column when one is known (a column that cannot be placed for sure is
    /// left out rather than guessed).
    pub fn maybe_column(mut self, column: Option<usize>) -> Diagnostic {
        self.column = column;
        self
    }

    /// Adds a hint on how to fix the problem.
    pub fn help(mut self, help: impl Into<String>) -> Diagnostic {
        self.help = Some(help.into());
        self
    }
}

/// `file:line[:col]: entry: message` and, on a second line, `  help: …`.
impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)?;
        if let Some(c) = self.column {
            write!(f, ":{c}")?;
        }
        f.write_str(": ")?;
        if let Some(e) = &self.entry {
            write!(f, "{e}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(h) = &self.help {
            write!(f, "\n  help: {h}")?;
        }
        Ok(())
    }
}

/// The most characters of user text (a schema, a type, a default) a message
/// quotes; longer text is cut with `…`, so that a pathological input does not
/// make a pathological message.
pub const QUOTE_CHARS: usize = 120;

/// `s`, or its first [`QUOTE_CHARS`] characters and `…` if it is longer.
///
/// ```
/// use opforge_schema::diag::abbrev;
/// assert_eq!(abbrev("int[]"), "int[]");
/// assert_eq!(abbrev(&"[".repeat(500)).chars().count(), 121);
/// ```
pub fn abbrev(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(QUOTE_CHARS) {
        None => s.into(),
        Some((at, _)) => format!("{}…", &s[..at]).into(),
    }
}

/// A list of diagnostics, printed one after another.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Orders the diagnostics by file position (line, then column; a diagnostic
    /// without a column comes first on its line). The sort is stable, so problems
    /// found at the same place keep the order they were found in.
    pub fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (&a.file, a.line, a.column.unwrap_or(0)).cmp(&(&b.file, b.line, b.column.unwrap_or(0)))
        });
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// The candidate closest to `s`, if it is close enough to be a typo: the same
/// word in another case, or one within an edit distance (ignoring case) of a
/// third of its length (at least 1). Ties go to the one sharing the longest
/// prefix with `s`, then to the alphabetically first.
///
/// ```
/// use opforge_schema::diag::nearest;
/// assert_eq!(nearest("mull", ["full", "mul", "null"].into_iter()), Some("mul"));
/// assert_eq!(nearest("Tnesor", ["Tensor", "Scalar"].into_iter()), Some("Tensor"));
/// assert_eq!(nearest("xyz", ["Tensor"].into_iter()), None);
/// ```
pub fn nearest<'a>(s: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (s.chars().count() / 3).max(1);
    let lower = s.to_lowercase();
    // Among equally near names, the one sharing the longest prefix
    // (`mull` → `mul`, not `full`), then the first in order.
    let prefix = |c: &str| {
        lower
            .chars()
            .zip(c.to_lowercase().chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    candidates
        .map(|c| {
            (
                edit_distance(&lower, &c.to_lowercase()),
                std::cmp::Reverse(prefix(c)),
                c,
            )
        })
        .filter(|(d, _, _)| *d <= limit)
        .min()
        .map(|(_, _, c)| c)
}

/// Edit distance over characters, counting an insertion, a deletion, a
/// substitution or a swap of two neighbouring characters as one edit (optimal
/// string alignment), so that `Tnesor` is one edit from `Tensor`.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Rows i-2, i-1 and i of the distance table.
    let mut prev2: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let mut d = (prev[j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(prev[j] + 1)
                .min(cur[j - 1] + 1);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d = d.min(prev2[j - 2] + 1);
            }
            cur[j] = d;
        }
        prev2 = std::mem::replace(&mut prev, cur);
    }
    prev[b.len()]
}
