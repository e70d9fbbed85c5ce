//! Incremental UTF-8 decoding of a byte stream that arrives in arbitrary chunks.
//!
//! A multi-byte character split across two pipe reads is carried over instead of being replaced; genuinely invalid
//! bytes become U+FFFD so previews and recovery files are always valid UTF-8.

/// Decoder state: at most 3 bytes of an incomplete trailing character.
#[derive(Debug, Default)]
pub struct Utf8Decoder {
    carry: Vec<u8>,
}

impl Utf8Decoder {
    /// A decoder with nothing carried over.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes` (continuing any carried partial character) and appends the text to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut String) {
        // Finish a carried character one byte at a time (at most 3 more bytes).
        while !self.carry.is_empty() && !bytes.is_empty() {
            self.carry.push(bytes[0]);
            bytes = &bytes[1..];
            match std::str::from_utf8(&self.carry) {
                Ok(s) => {
                    out.push_str(s);
                    self.carry.clear();
                }
                Err(e) => match e.error_len() {
                    None => {}
                    Some(bad) => {
                        out.push('\u{FFFD}');
                        let rest = self.carry.split_off(bad);
                        self.carry.clear();
                        self.decode_into(&rest, out);
                    }
                },
            }
        }
        self.decode_into(bytes, out);
    }

    /// Flushes a dangling partial character at end of stream as U+FFFD.
    pub fn finish(&mut self, out: &mut String) {
        if !self.carry.is_empty() {
            self.carry.clear();
            out.push('\u{FFFD}');
        }
    }

    fn decode_into(&mut self, mut bytes: &[u8], out: &mut String) {
        loop {
            match std::str::from_utf8(bytes) {
                Ok(s) => {
                    out.push_str(s);
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // SAFETY: `from_utf8` just checked that `bytes[..valid]` is valid UTF-8.
                    out.push_str(unsafe { std::str::from_utf8_unchecked(&bytes[..valid]) });
                    match e.error_len() {
                        Some(bad) => {
                            out.push('\u{FFFD}');
                            bytes = &bytes[valid + bad..];
                        }
                        None => {
                            self.carry.extend_from_slice(&bytes[valid..]);
                            return;
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> String {
        let mut d = Utf8Decoder::new();
        let mut s = String::new();
        for c in chunks {
            d.push(c, &mut s);
        }
        d.finish(&mut s);
        s
    }

    #[test]
    fn split_char_across_reads() {
        let text = "a😀b€c";
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            for j in i..bytes.len() {
                assert_eq!(
                    decode_chunks(&[&bytes[..i], &bytes[i..j], &bytes[j..]]),
                    text,
                    "{i} {j}"
                );
            }
        }
        // byte by byte
        let chunks: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(decode_chunks(&chunks), text);
    }

    #[test]
    fn invalid_bytes_become_replacement() {
        assert_eq!(decode_chunks(&[b"a\xffb"]), "a\u{FFFD}b");
        assert_eq!(decode_chunks(&[b"a\xe2\x82"]), "a\u{FFFD}");
        assert_eq!(decode_chunks(&[b"\xe2", b"\x28x"]), "\u{FFFD}(x");
        assert_eq!(decode_chunks(&[b"\xf0\x9f", b"\x98"]), "\u{FFFD}");
    }
}
