//! The contract every source keeps: one error type whose message names the input and what is
//! wrong in one line, the repairs a reader made counted by kind (one warning line each), and
//! the limits that counts read from a file or an option are checked against before anything
//! is sized from them.

/// Largest torus accepted from a file or a generator (nodes); larger ones are refused up front.
pub const MAX_NODES: u64 = 1 << 24;
/// Largest number of generated messages (~32 bytes each resident).
pub const MAX_MESSAGES: u64 = 200_000_000;

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{input}: {message}")]
    Invalid { input: String, message: String },
    #[error("{input}: {source}")]
    Io { input: String, source: std::io::Error },
}

impl SourceError {
    pub fn invalid(input: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid { input: input.into(), message: message.into() }
    }
}

/// What a reader repaired to open a file, as the trusted peers (Vampir, `otf2-print`, Perfetto,
/// chrome://tracing) accept it: per kind of repair, how often and where first. Each kind becomes
/// one warning line.
#[derive(Clone, Debug, Default)]
pub struct Repairs {
    kinds: Vec<(&'static str, u64, String)>,
}

impl Repairs {
    /// One more repair of kind `what`; `first` says where, asked only the first time.
    pub fn add(&mut self, what: &'static str, first: impl FnOnce() -> String) {
        match self.kinds.iter_mut().find(|k| k.0 == what) {
            Some(k) => k.1 += 1,
            None => self.kinds.push((what, 1, first())),
        }
    }

    /// How many repairs of kind `what`.
    pub fn count(&self, what: &str) -> u64 {
        self.kinds.iter().find(|k| k.0 == what).map_or(0, |k| k.1)
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    /// Adds `other`'s counts to these (its first places where these have none).
    pub fn merge(&mut self, other: &Repairs) {
        for (what, n, first) in &other.kinds {
            match self.kinds.iter_mut().find(|k| k.0 == *what) {
                Some(k) => k.1 += n,
                None => self.kinds.push((what, *n, first.clone())),
            }
        }
    }

    /// One line each: "INPUT: N WHAT (first: WHERE)".
    pub fn lines(&self, input: &str) -> Vec<String> {
        self.kinds.iter().map(|(what, n, first)| format!("{input}: {n} {what} (first: {first})")).collect()
    }
}
