//! An incremental Server-Sent Events decoder: bytes in, `(event, data)` pairs out, whatever the
//! chunk boundaries (mid-line, mid-`data:`, mid-UTF-8 character, between `\r` and `\n`).
//!
//! Only complete lines are decoded as UTF-8, so a character split across two reads is never
//! seen half. Field handling follows the SSE format: `event:` names the event, `data:` lines are
//! joined with `\n`, a line starting with `:` is a comment, `id:` and `retry:` are ignored, and a
//! blank line dispatches the event.
//!
//! One decoder serves both ends of Baton: the model adapters read providers' streams with it and
//! the client reads the server's `/sse` with it.

/// A line of the stream that is not UTF-8: the stream is not SSE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the event stream has a line that is not UTF-8")]
pub struct NotUtf8;

/// One dispatched event. `event` is empty when the server named none (OpenAI never does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    pub event: &'a str,
    pub data: &'a str,
}

/// The decoder's state between reads.
#[derive(Debug, Default)]
pub struct Decoder {
    /// Bytes of the line not yet terminated.
    pending: Vec<u8>,
    /// The previous read ended with `\r`: a `\n` starting the next one belongs to it.
    after_carriage_return: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl Decoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes `bytes`, calling `on_event` for every event they complete. Stops at the first
    /// error `on_event` returns, or at a line that is not UTF-8.
    pub fn feed<E: From<NotUtf8>>(
        &mut self,
        mut bytes: &[u8],
        on_event: &mut impl FnMut(Event<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.after_carriage_return {
            self.after_carriage_return = false;
            if let [b'\n', rest @ ..] = bytes {
                bytes = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let terminator = bytes[end];
            if self.pending.is_empty() {
                self.line(&bytes[..end], on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.pending);
                line.extend_from_slice(&bytes[..end]);
                self.line(&line, on_event)?;
                line.clear();
                self.pending = line;
            }
            let mut next = end + 1;
            if terminator == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    Some(_) => {}
                    None => self.after_carriage_return = true,
                }
            }
            bytes = &bytes[next..];
        }
        self.pending.extend_from_slice(bytes);
        Ok(())
    }

    /// Whether bytes of an unfinished line or event are held: at the end of a body this means
    /// the stream was cut.
    pub fn has_partial_event(&self) -> bool {
        !self.pending.is_empty() || self.has_data
    }

    fn line<E: From<NotUtf8>>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(Event<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if line.is_empty() {
            if self.has_data {
                let dispatched = on_event(Event {
                    event: &self.event,
                    data: &self.data,
                });
                self.event.clear();
                self.data.clear();
                self.has_data = false;
                return dispatched;
            }
            self.event.clear();
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| NotUtf8)?;
        let (field, value) = match line.find(':') {
            Some(0) => return Ok(()),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line, ""),
        };
        match field {
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            _ => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_in_pieces(input: &[u8], sizes: &[usize]) -> Vec<(String, String)> {
        let mut decoder = Decoder::new();
        let mut events = Vec::new();
        let mut rest = input;
        let mut sizes = sizes.iter().cycle();
        while !rest.is_empty() {
            let take = (*sizes.next().unwrap()).min(rest.len());
            decoder
                .feed::<NotUtf8>(&rest[..take], &mut |event| {
                    events.push((event.event.to_owned(), event.data.to_owned()));
                    Ok(())
                })
                .unwrap();
            rest = &rest[take..];
        }
        assert!(!decoder.has_partial_event());
        events
    }

    #[test]
    fn events_come_out_the_same_whatever_the_chunk_boundaries() {
        let input = "event: message_start\r\ndata: {\"a\":\"Grüße 🎉\"}\r\n\r\n\
                     : keep-alive comment\n\ndata:first\ndata: second\nid: 7\nretry: 10\n\n\
                     event: ping\rdata: {}\r\rdata: [DONE]\n\n"
            .as_bytes();
        let expected = vec![
            (
                "message_start".to_owned(),
                "{\"a\":\"Grüße 🎉\"}".to_owned(),
            ),
            (String::new(), "first\nsecond".to_owned()),
            ("ping".to_owned(), "{}".to_owned()),
            (String::new(), "[DONE]".to_owned()),
        ];
        for sizes in [
            &[input.len()][..],
            &[1],
            &[2],
            &[3, 1, 7],
            &[5, 13],
            &[29, 2],
        ] {
            assert_eq!(decode_in_pieces(input, sizes), expected, "sizes {sizes:?}");
        }
    }

    #[test]
    fn an_unfinished_event_is_held_and_bad_utf8_is_a_typed_error() {
        let mut decoder = Decoder::new();
        let mut count = 0;
        decoder
            .feed::<NotUtf8>(b"data: {\"partial\"", &mut |_| {
                count += 1;
                Ok(())
            })
            .unwrap();
        assert_eq!(count, 0);
        assert!(decoder.has_partial_event());
        let error = Decoder::new()
            .feed::<NotUtf8>(b"data: \xff\xfe\n\n", &mut |_| Ok(()))
            .unwrap_err();
        assert_eq!(error, NotUtf8);
    }
}
