//! `NAME?key=value&...`: the options of generators (`gen:fd4?ranks=4096`), edge sets and
//! folders (`DIR?year=2017`), parsed by one parser for every source: each pair must be
//! `key=value`, the last of a repeated key wins, unknown keys are named with the known ones.

use crate::source::SourceError;

/// The options of one input, checked to be `key=value` pairs.
#[derive(Clone, Debug)]
pub struct Query {
    /// The whole input, for error messages.
    input: String,
    pairs: Vec<(String, String)>,
}

impl Query {
    /// The options in `query` (the text after `?`) of `input`.
    pub fn parse(input: &str, query: &str) -> Result<Self, SourceError> {
        let mut pairs = Vec::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair
                .split_once('=')
                .ok_or_else(|| SourceError::invalid(input, format!("option '{pair}' is not key=value")))?;
            pairs.push((k.to_string(), v.to_string()));
        }
        Ok(Self { input: input.to_string(), pairs })
    }

    /// `spec` split at its first `?` into a name and its options (none without a `?`).
    pub fn split<'s>(input: &str, spec: &'s str) -> Result<(&'s str, Self), SourceError> {
        let (name, query) = spec.split_once('?').unwrap_or((spec, ""));
        Ok((name, Self::parse(input, query)?))
    }

    /// The input the options belong to.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The value of `key`, the last given.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// Whether every key is one of `known`; else the error names the first unknown one, `whose`
    /// options these are ("gen:wrf") and the known keys.
    pub fn only(&self, known: &[&str], whose: &str) -> Result<(), SourceError> {
        match self.pairs.iter().find(|(k, _)| !known.contains(&k.as_str())) {
            Some((k, _)) => {
                Err(self.invalid(format!("unknown option '{k}' for {whose} (expected {})", known.join(", "))))
            }
            None => Ok(()),
        }
    }

    /// Whether every key is one of `keys` (no error).
    pub fn all_in(&self, keys: &[&str]) -> bool {
        self.pairs.iter().all(|(k, _)| keys.contains(&k.as_str()))
    }

    /// `key` as a whole number up to `max` (`1e6` is a whole number too), `default` when absent.
    pub fn count(&self, key: &str, default: u64, max: u64) -> Result<u64, SourceError> {
        self.get(key).map_or(Ok(default), |v| whole(&self.input, key, v, max))
    }

    /// `key` as a whole number up to `max`, if given.
    pub fn count_opt(&self, key: &str, max: u64) -> Result<Option<u64>, SourceError> {
        self.get(key).map(|v| whole(&self.input, key, v, max)).transpose()
    }

    /// An error about these options, naming the input.
    pub fn invalid(&self, message: impl Into<String>) -> SourceError {
        SourceError::invalid(&self.input, message)
    }
}

/// `v`, the value of option `key`, as a whole number up to `max`.
pub fn whole(input: &str, key: &str, v: &str, max: u64) -> Result<u64, SourceError> {
    let n = v.parse::<u64>().ok().or_else(|| {
        v.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite() && *f >= 0.0 && f.fract() == 0.0 && *f < 1.8e19)
            .map(|f| f as u64)
    });
    match n {
        None => Err(SourceError::invalid(input, format!("option {key}={v} is not a whole number"))),
        Some(n) if n > max => Err(SourceError::invalid(input, format!("option {key}={n} is above the limit of {max}"))),
        Some(n) => Ok(n),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_checked_once_and_the_last_wins() {
        let (name, q) = Query::split("gen:x?a=1&b=2e3&a=3", "x?a=1&b=2e3&a=3").unwrap();
        assert_eq!((name, q.get("a"), q.count("b", 0, 10_000).unwrap()), ("x", Some("3"), 2000));
        assert_eq!(q.count("c", 7, 10).unwrap(), 7);
        assert!(q.count("b", 0, 100).unwrap_err().to_string().contains("above the limit of 100"));
        let e = q.only(&["a"], "gen:x").unwrap_err().to_string();
        assert_eq!(e, "gen:x?a=1&b=2e3&a=3: unknown option 'b' for gen:x (expected a)");
        assert!(q.all_in(&["a", "b"]) && !q.all_in(&["a"]));
        let e = Query::parse("gen:y?oops", "oops").unwrap_err().to_string();
        assert_eq!(e, "gen:y?oops: option 'oops' is not key=value");
        assert!(Query::parse("i", "n=ten").unwrap().count("n", 0, 9).unwrap_err().to_string().contains("whole number"));
    }
}
