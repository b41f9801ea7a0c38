//! The protobuf wire format: a reader that yields `(field number, value)` pairs and skips
//! unknown fields of every wire type (groups included), and the writing helpers the
//! encoder uses.

/// One field value as it appears on the wire. Groups are skipped, not returned.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Group,
    Fixed32,
}

impl<'a> WireValue<'a> {
    fn wire_name(self) -> &'static str {
        match self {
            WireValue::Varint(_) => "varint (0)",
            WireValue::Fixed64(_) => "fixed64 (1)",
            WireValue::Len(_) => "length-delimited (2)",
            WireValue::Group => "group (3)",
            WireValue::Fixed32 => "fixed32 (5)",
        }
    }

    pub(crate) fn expect_len(self, number: u32) -> Result<&'a [u8], String> {
        match self {
            WireValue::Len(bytes) => Ok(bytes),
            other => Err(wrong_wire_type(number, other, "length-delimited (2)")),
        }
    }

    pub(crate) fn expect_varint(self, number: u32) -> Result<u64, String> {
        match self {
            WireValue::Varint(v) => Ok(v),
            other => Err(wrong_wire_type(number, other, "varint (0)")),
        }
    }
}

impl WireValue<'_> {
    pub(crate) fn expect_fixed64(self, number: u32) -> Result<u64, String> {
        match self {
            WireValue::Fixed64(v) => Ok(v),
            other => Err(wrong_wire_type(number, other, "fixed64 (1)")),
        }
    }
}

fn wrong_wire_type(number: u32, found: WireValue<'_>, expected: &str) -> String {
    format!(
        "wrong wire type {} for field {number}, expected {expected}",
        found.wire_name()
    )
}

/// The largest field number protobuf allows (2^29 - 1).
pub(crate) const MAX_FIELD_NUMBER: u64 = (1 << 29) - 1;

/// A cursor over one message's bytes.
pub(crate) struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = self
            .buf
            .get(self.pos)
            .copied()
            .ok_or_else(|| "truncated varint".to_owned())?;
        self.pos += 1;
        Ok(b)
    }

    /// A base-128 varint of at most 10 bytes; bits past 64 are dropped, as Go does.
    pub(crate) fn varint(&mut self) -> Result<u64, String> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint is longer than 10 bytes".to_owned())
    }

    fn take(&mut self, len: u64, what: &str) -> Result<&'a [u8], String> {
        let remaining = self.buf.len().saturating_sub(self.pos);
        let len = usize::try_from(len)
            .ok()
            .filter(|&len| len <= remaining)
            .ok_or_else(|| {
                format!("{what} of {len} bytes runs past the end of the data ({remaining} left)")
            })?;
        let start = self.pos;
        self.pos += len;
        self.buf
            .get(start..self.pos)
            .ok_or_else(|| format!("{what} runs past the end of the data"))
    }

    fn tag(&mut self) -> Result<(u32, u8), String> {
        let tag = self.varint()?;
        let number = tag >> 3;
        // The mask keeps the wire type within 0..=7, so the cast is lossless.
        let wire_type = (tag & 7) as u8;
        if number == 0 || number > MAX_FIELD_NUMBER {
            return Err(format!(
                "illegal field number {number} (wire type {wire_type})"
            ));
        }
        let number = u32::try_from(number).map_err(|_| format!("illegal field number {number}"))?;
        Ok((number, wire_type))
    }

    /// The next field of the message, or `None` at its end.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, String> {
        if self.at_end() {
            return Ok(None);
        }
        let (number, wire_type) = self.tag()?;
        let value = match wire_type {
            0 => WireValue::Varint(self.varint()?),
            1 => {
                let bytes = self.take(8, "fixed64 value")?;
                let mut le = [0u8; 8];
                le.copy_from_slice(bytes);
                WireValue::Fixed64(u64::from_le_bytes(le))
            }
            2 => {
                let len = self.varint()?;
                WireValue::Len(self.take(len, "length-delimited field")?)
            }
            3 => {
                self.skip_group()?;
                WireValue::Group
            }
            4 => return Err(format!("unexpected end-group tag for field {number}")),
            5 => {
                self.take(4, "fixed32 value")?;
                WireValue::Fixed32
            }
            other => return Err(format!("invalid wire type {other} for field {number}")),
        };
        Ok(Some((number, value)))
    }

    /// Skips the body of a group whose start tag was just read, nested groups included.
    fn skip_group(&mut self) -> Result<(), String> {
        let mut depth: usize = 1;
        while depth > 0 {
            if self.at_end() {
                return Err("unterminated group".to_owned());
            }
            let (_, wire_type) = self.tag()?;
            match wire_type {
                0 => {
                    self.varint()?;
                }
                1 => {
                    self.take(8, "fixed64 value")?;
                }
                2 => {
                    let len = self.varint()?;
                    self.take(len, "length-delimited field")?;
                }
                3 => depth += 1,
                4 => depth -= 1,
                5 => {
                    self.take(4, "fixed32 value")?;
                }
                other => return Err(format!("invalid wire type {other} inside a group")),
            }
        }
        Ok(())
    }
}

/// `text` as UTF-8, or why not.
pub(crate) fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("invalid UTF-8 in string: {e}"))
}

// --- writing --------------------------------------------------------------------------------

/// Wire type of varints (int32, int64, bool).
pub(crate) const VARINT: u8 = 0;
/// Wire type of fixed64 (double).
pub(crate) const FIXED64: u8 = 1;
/// Wire type of length-delimited fields (strings, bytes, messages, map entries).
pub(crate) const LEN: u8 = 2;

/// Appends `v` as a base-128 varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        // The mask keeps the low seven bits, so the cast is lossless.
        out.push((v & 0x7f) as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// The number of bytes `v` takes as a varint.
pub(crate) fn varint_len(v: u64) -> usize {
    // Seven bits a byte, at least one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// Appends a field tag.
pub(crate) fn put_tag(out: &mut Vec<u8>, number: u32, wire_type: u8) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire_type));
}

/// Appends a length-delimited field with its bytes.
pub(crate) fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Starts a length-delimited field whose length is not known yet: the tag and a one-byte
/// placeholder. Returns where the placeholder is, for [`end_len`].
pub(crate) fn begin_len(out: &mut Vec<u8>, number: u32) -> usize {
    put_tag(out, number, LEN);
    out.push(0);
    out.len() - 1
}

/// Ends the field [`begin_len`] started: writes the length of what follows the
/// placeholder, moving it up when the length needs more than one byte.
pub(crate) fn end_len(out: &mut Vec<u8>, at: usize) {
    let len = out.len() - at - 1;
    let n = varint_len(len as u64);
    if n > 1 {
        out.resize(out.len() + n - 1, 0);
        out.copy_within(at + 1..at + 1 + len, at + n);
    }
    let mut v = len as u64;
    for slot in out.iter_mut().skip(at).take(n) {
        *slot = if v >= 0x80 {
            (v & 0x7f) as u8 | 0x80
        } else {
            v as u8
        };
        v >>= 7;
    }
}
