//! One event of a Chrome trace as the tokenizer reads it and the builder takes it: its fields,
//! names interned, numbers as JSON or a string writes them, ids as numbers or text.

use serde::Deserialize;
use serde::de::Visitor;

/// A number as JSON writes it, or as a string holding one (rocprofiler writes `"ts": "12"`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Num {
    pub(super) value: f64,
    pub(super) text: bool,
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number, or a string holding one")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num { value: v, text: false })
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num { value: v as f64, text: false })
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num { value: v as f64, text: false })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Num, E> {
                let value = v.trim().parse::<f64>().map_err(|_| E::custom(format!("'{v}' is not a number")))?;
                Ok(Num { value, text: true })
            }
        }
        d.deserialize_any(V)
    }
}

/// A process, thread or flow id as written: a number (or a string holding a whole number), or
/// other text, interned. A number and the same number written as a string are one id.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(super) enum Id {
    #[default]
    None,
    Num(i64),
    Text(u32),
}

/// One event's fields as read: names interned as they are met, `args` kept only where and as
/// far as they are read (no JSON tree for the arguments of every event).
#[derive(Default)]
pub(super) struct Event {
    pub(super) name: Option<u32>,
    pub(super) cat: Option<u32>,
    /// The phase's letter; 0 for none or an empty one, `?` for a longer one.
    pub(super) ph: u8,
    pub(super) ts: Option<Num>,
    pub(super) dur: Option<Num>,
    pub(super) pid: Id,
    pub(super) tid: Id,
    pub(super) id: Id,
    /// A process or thread id written as a string holding a number.
    pub(super) id_as_text: bool,
    pub(super) args: Option<serde_json::Value>,
    pub(super) correlation: Option<i64>,
    /// How many arguments the event carries (counted for instants, whose arguments are not kept).
    pub(super) arg_count: u32,
    /// An instant's scope: `g` global, `p` process, `t` thread (0 where not written).
    pub(super) scope: u8,
}
