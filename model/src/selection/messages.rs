//! Which messages the MPI views draw: a range of sizes, a tag, a range of senders and of
//! receivers. A filter the pyramid's sums cannot serve: the views draw it from the rows.

/// Messages kept by size (bytes, both ends included), tag, sender and receiver (locations,
/// both ends included); `None`: any.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageFilter {
    pub bytes: Option<(u32, u32)>,
    pub tag: Option<u32>,
    pub senders: Option<(u32, u32)>,
    pub receivers: Option<(u32, u32)>,
}

impl MessageFilter {
    /// Whether a message of `bytes` and `tag` from `source` to `destination` is kept.
    pub fn keeps(&self, bytes: u32, tag: u32, source: u32, destination: u32) -> bool {
        let within = |r: Option<(u32, u32)>, v: u32| r.is_none_or(|(a, b)| a <= v && v <= b);
        within(self.bytes, bytes)
            && self.tag.is_none_or(|t| t == tag)
            && within(self.senders, source)
            && within(self.receivers, destination)
    }

    /// Whether it keeps every message.
    pub fn is_all(&self) -> bool {
        *self == Self::default()
    }

    /// Whether it reads the messages' sizes or tags (beside their ends).
    pub fn reads_sizes_or_tags(&self) -> bool {
        self.bytes.is_some() || self.tag.is_some()
    }

    /// `bytes=MIN-MAX,tag=T,from=A-B,to=C-D`, any of them, in any order (one value: that value
    /// alone; sizes may end in K, M or G, powers of 1024), or why not.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut f = Self::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (key, value) =
                part.split_once('=').ok_or_else(|| format!("'{part}' is not KEY=VALUE (bytes, tag, from or to)"))?;
            let range = |v: &str, size: bool| -> Result<(u32, u32), String> {
                let num = |w: &str| -> Result<u32, String> {
                    let w = w.trim();
                    let (digits, scale) = match w.chars().last().map(|c| c.to_ascii_uppercase()) {
                        Some('K') if size => (&w[..w.len() - 1], 1u64 << 10),
                        Some('M') if size => (&w[..w.len() - 1], 1 << 20),
                        Some('G') if size => (&w[..w.len() - 1], 1 << 30),
                        _ => (w, 1),
                    };
                    let n =
                        digits.trim().parse::<u64>().map_err(|_| format!("'{w}' in '{part}' is not a whole number"))?;
                    u32::try_from(n * scale).map_err(|_| format!("'{w}' in '{part}' is more than 4 GiB"))
                };
                let (a, b) = match v.split_once('-') {
                    Some((a, b)) => (num(a)?, num(b)?),
                    None => (num(v)?, num(v)?),
                };
                if a > b {
                    return Err(format!("'{part}' is empty: its first end is above its second"));
                }
                Ok((a, b))
            };
            match key.trim() {
                "bytes" => f.bytes = Some(range(value, true)?),
                "tag" => f.tag = Some(range(value, false).map(|(a, _)| a)?),
                "from" => f.senders = Some(range(value, false)?),
                "to" => f.receivers = Some(range(value, false)?),
                k => return Err(format!("'{k}' is not a message filter's key (bytes, tag, from or to)")),
            }
        }
        if f.is_all() {
            return Err(format!("'{text}' filters nothing (bytes=MIN-MAX, tag=T, from=A-B, to=C-D)"));
        }
        Ok(f)
    }

    /// The filter in words, for a picture's title: `messages of 1024-65536 bytes, tag 7, from
    /// 0-15, to 16-31`.
    pub fn describe(&self) -> String {
        let span = |(a, b): (u32, u32)| if a == b { a.to_string() } else { format!("{a}-{b}") };
        let mut parts = Vec::new();
        if let Some(r) = self.bytes {
            parts.push(format!("of {} bytes", span(r)));
        }
        if let Some(t) = self.tag {
            parts.push(format!("tag {t}"));
        }
        if let Some(r) = self.senders {
            parts.push(format!("from {}", span(r)));
        }
        if let Some(r) = self.receivers {
            parts.push(format!("to {}", span(r)));
        }
        format!("messages {}", parts.join(", "))
    }
}

impl std::str::FromStr for MessageFilter {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_parse_keep_and_say_what_they_keep() {
        let f = MessageFilter::parse("bytes=1K-64K, tag=7,from=0-15,to=20").unwrap();
        assert_eq!(f.bytes, Some((1024, 65536)));
        assert_eq!((f.tag, f.senders, f.receivers), (Some(7), Some((0, 15)), Some((20, 20))));
        assert!(f.keeps(4096, 7, 3, 20));
        assert!(!f.keeps(100, 7, 3, 20) && !f.keeps(4096, 8, 3, 20));
        assert!(!f.keeps(4096, 7, 16, 20) && !f.keeps(4096, 7, 3, 21));
        assert_eq!(f.describe(), "messages of 1024-65536 bytes, tag 7, from 0-15, to 20");
        assert!(MessageFilter::default().keeps(0, 0, 0, 0) && MessageFilter::default().is_all());
        for bad in ["", "bytes", "size=3", "bytes=5-2", "from=x", "bytes=5G", "tag=1-2x"] {
            assert!(MessageFilter::parse(bad).is_err(), "{bad}");
        }
    }
}
