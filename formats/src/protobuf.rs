//! Protobuf's wire format, read field by field without a schema compiler: the readers of
//! Perfetto's TracePacket stream and of Chakra's execution traces name the fields they read
//! (the numbers of the tools' own `.proto` files) and skip the rest, as protobuf's own parsers
//! do. Every length is checked against the bytes present before it is used; nothing is
//! allocated from a number in the file.

/// A field's value as the wire carries it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Value<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Bytes(&'a [u8]),
}

impl<'a> Value<'a> {
    /// An integer field (varint or fixed), `None` for bytes.
    pub(crate) fn int(self) -> Option<u64> {
        match self {
            Value::Varint(v) | Value::Fixed64(v) => Some(v),
            Value::Fixed32(v) => Some(u64::from(v)),
            Value::Bytes(_) => None,
        }
    }

    /// A `double` field (fixed 64 bits).
    pub(crate) fn double(self) -> Option<f64> {
        match self {
            Value::Fixed64(v) => Some(f64::from_bits(v)),
            Value::Fixed32(v) => Some(f64::from(f32::from_bits(v))),
            _ => None,
        }
    }

    /// A message, string or packed field's bytes.
    pub(crate) fn bytes(self) -> Option<&'a [u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// A string field, with bytes that are not UTF-8 replaced.
    pub(crate) fn text(self) -> Option<String> {
        self.bytes().map(|b| String::from_utf8_lossy(b).into_owned())
    }
}

/// A varint at `*at` in `b`, advancing past it; `None` where it runs past the end or over 10
/// bytes.
pub(crate) fn varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut v = 0u64;
    for shift in 0..10 {
        let byte = *b.get(*at)?;
        *at += 1;
        v |= u64::from(byte & 0x7f) << (7 * shift);
        if byte < 0x80 {
            return Some(v);
        }
    }
    None
}

/// The fields of one message, in order; iteration stops at the first field that does not parse
/// (its error is kept in `broken`).
pub(crate) struct Fields<'a> {
    b: &'a [u8],
    at: usize,
    pub(crate) broken: bool,
}

pub(crate) fn fields(b: &[u8]) -> Fields<'_> {
    Fields { b, at: 0, broken: false }
}

impl<'a> Iterator for Fields<'a> {
    type Item = (u32, Value<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.b.len() || self.broken {
            return None;
        }
        let parsed = field(self.b, &mut self.at);
        if parsed.is_none() {
            self.broken = true;
        }
        parsed
    }
}

/// One field at `*at`: its number and value, advancing past it.
pub(crate) fn field<'a>(b: &'a [u8], at: &mut usize) -> Option<(u32, Value<'a>)> {
    let key = varint(b, at)?;
    let number = u32::try_from(key >> 3).ok().filter(|&n| n > 0)?;
    let value = match key & 7 {
        0 => Value::Varint(varint(b, at)?),
        1 => {
            let bytes: [u8; 8] = b.get(*at..*at + 8)?.try_into().ok()?;
            *at += 8;
            Value::Fixed64(u64::from_le_bytes(bytes))
        }
        2 => {
            let len = usize::try_from(varint(b, at)?).ok()?;
            let end = at.checked_add(len)?;
            let bytes = b.get(*at..end)?;
            *at = end;
            Value::Bytes(bytes)
        }
        5 => {
            let bytes: [u8; 4] = b.get(*at..*at + 4)?.try_into().ok()?;
            *at += 4;
            Value::Fixed32(u32::from_le_bytes(bytes))
        }
        _ => return None,
    };
    Some((number, value))
}

/// The values of a repeated integer field, packed (one bytes field of varints) or not.
pub(crate) fn push_ints(v: Value, fixed64: bool, out: &mut Vec<u64>) {
    match v {
        Value::Bytes(b) => {
            let mut at = 0;
            while at < b.len() {
                let x = if fixed64 {
                    let Some(bytes) = b.get(at..at + 8) else { return };
                    at += 8;
                    u64::from_le_bytes(bytes.try_into().expect("eight bytes"))
                } else {
                    let Some(x) = varint(b, &mut at) else { return };
                    x
                };
                out.push(x);
            }
        }
        other => out.extend(other.int()),
    }
}

/// The values of a repeated double field, packed or not.
pub(crate) fn push_doubles(v: Value, out: &mut Vec<f64>) {
    match v {
        Value::Bytes(b) => {
            out.extend(b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().expect("eight bytes"))));
        }
        other => out.extend(other.double()),
    }
}

/// Protobuf encoders for the readers' tests, to write the messages they read.
#[cfg(test)]
pub(crate) mod encode {
    pub(crate) fn var(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    /// A varint field.
    pub(crate) fn int(field: u32, v: u64) -> Vec<u8> {
        let mut o = Vec::new();
        var(u64::from(field) << 3, &mut o);
        var(v, &mut o);
        o
    }
    /// A length-delimited field (a message, string or packed list).
    pub(crate) fn bytes(field: u32, b: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        var((u64::from(field) << 3) | 2, &mut o);
        var(b.len() as u64, &mut o);
        o.extend_from_slice(b);
        o
    }
    /// A `double` field.
    pub(crate) fn double(field: u32, v: f64) -> Vec<u8> {
        let mut o = Vec::new();
        var((u64::from(field) << 3) | 1, &mut o);
        o.extend_from_slice(&v.to_le_bytes());
        o
    }
    /// A message prefixed by its length, as a stream of messages has it.
    pub(crate) fn prefixed(m: &[u8]) -> Vec<u8> {
        let mut o = Vec::new();
        var(m.len() as u64, &mut o);
        o.extend_from_slice(m);
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_of_every_wire_type_read_and_bad_ones_stop() {
        // 1: varint 150; 2: "hi"; 3: fixed64 7; 4: fixed32 9.
        let b = [0x08, 0x96, 0x01, 0x12, 2, b'h', b'i', 0x19, 7, 0, 0, 0, 0, 0, 0, 0, 0x25, 9, 0, 0, 0];
        let f: Vec<(u32, Value)> = fields(&b).collect();
        assert_eq!(
            f,
            vec![(1, Value::Varint(150)), (2, Value::Bytes(b"hi")), (3, Value::Fixed64(7)), (4, Value::Fixed32(9))]
        );
        // A length past the end, a wire type 3 and field number 0 stop the iteration.
        for bad in [&[0x12u8, 9, 1][..], &[0x0b], &[0x00, 1]] {
            let mut it = fields(bad);
            assert!(it.next().is_none() && it.broken, "{bad:?}");
        }
        let mut ints = Vec::new();
        push_ints(Value::Bytes(&[1, 0x96, 0x01]), false, &mut ints);
        push_ints(Value::Varint(5), false, &mut ints);
        assert_eq!(ints, vec![1, 150, 5]);
    }
}
