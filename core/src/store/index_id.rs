//! The short form of an id in the indexes outside the sessions' slots (the search index's members
//! and records, the deadline index's members): each `.`-separated part of 32 lowercase hex digits
//! (a minted session or run id) is written as `~` and 22 characters of a 64-letter alphabet in
//! ASCII order (16 bytes, 6 bits a letter), so a member takes 23 bytes instead of 32 and fits a
//! smaller allocation; other parts (a session named by its client) are kept as they are. `~` is
//! in no valid name, so a short part never reads as a name. Ids written before the short form
//! (the whole id as it is) read back unchanged: [`expand`] leaves them alone.

/// The short form's letters, in ASCII order (so short parts sort as their bytes do).
const LETTERS: &[u8; 64] = b"-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";
/// The mark of a short part.
const MARK: char = '~';
/// Letters of a short part after its mark.
const SHORT_LETTERS: usize = 22;

fn hex_value(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        _ => None,
    }
}

fn letter_value(byte: u8) -> Option<u8> {
    LETTERS
        .iter()
        .position(|letter| *letter == byte)
        .and_then(|at| u8::try_from(at).ok())
}

/// A part of 32 lowercase hex digits as its short form; `None` for any other part.
fn shorten_part(part: &str) -> Option<String> {
    if part.len() != 32 {
        return None;
    }
    let mut value = 0u128;
    for byte in part.bytes() {
        value = (value << 4) | u128::from(hex_value(byte)?);
    }
    let mut short = String::with_capacity(SHORT_LETTERS + 1);
    short.push(MARK);
    // 128 bits in 22 letters: the last holds the lowest 2 bits, shifted up (so order holds).
    for index in 0..SHORT_LETTERS {
        let shift = 128i32 - 6 * (index as i32 + 1);
        let bits = if shift >= 0 {
            (value >> shift) & 0x3f
        } else {
            (value << (-shift)) & 0x3f
        };
        short.push(char::from(LETTERS[bits as usize]));
    }
    Some(short)
}

/// A short part back to its 32 hex digits; `None` for a part that is not one.
fn expand_part(part: &str) -> Option<String> {
    let letters = part.strip_prefix(MARK)?;
    if letters.len() != SHORT_LETTERS {
        return None;
    }
    let mut value = 0u128;
    for (index, byte) in letters.bytes().enumerate() {
        let bits = u128::from(letter_value(byte)?);
        let shift = 128i32 - 6 * (index as i32 + 1);
        if shift >= 0 {
            value |= bits << shift;
        } else {
            if bits & ((1 << (-shift)) - 1) != 0 {
                return None;
            }
            value |= bits >> (-shift);
        }
    }
    Some(format!("{value:032x}"))
}

/// The form of `id` written in an index.
pub fn shorten(id: &str) -> String {
    id.split('.')
        .map(|part| shorten_part(part).unwrap_or_else(|| part.to_owned()))
        .collect::<Vec<_>>()
        .join(".")
}

/// The id an index's `member` names, whichever form it was written in.
pub fn expand(member: &str) -> String {
    if !member.contains(MARK) {
        return member.to_owned();
    }
    member
        .split('.')
        .map(|part| expand_part(part).unwrap_or_else(|| part.to_owned()))
        .collect::<Vec<_>>()
        .join(".")
}

#[cfg(test)]
mod tests {
    use super::{expand, shorten};

    #[test]
    fn minted_ids_shorten_and_expand_and_keep_their_order() {
        let ids = [
            "00000000000000000000000000000000",
            "0189abcdef0123456789abcdef012345",
            "0189abcdef0123456789abcdef012346",
            "ffffffffffffffffffffffffffffffff",
        ];
        for id in ids {
            let short = shorten(id);
            assert_eq!(short.len(), 23, "{short}");
            assert_eq!(expand(&short), id);
        }
        for pair in ids.windows(2) {
            assert!(shorten(pair[0]) < shorten(pair[1]), "{pair:?}");
        }
        let child = "0189abcdef0123456789abcdef012345.ffffffffffffffffffffffffffffffff";
        assert_eq!(shorten(child).len(), 47);
        assert_eq!(expand(&shorten(child)), child);
    }

    #[test]
    fn other_ids_and_the_old_form_are_kept_as_they_are() {
        for id in [
            "support-desk_42",
            "rc-0189abcdef0123456789abcdef012345",
            "0189ABCDEF0123456789ABCDEF012345",
        ] {
            assert_eq!(shorten(id), id);
            assert_eq!(expand(id), id);
        }
        assert_eq!(expand("~tooshort"), "~tooshort");
        let old = "0189abcdef0123456789abcdef012345";
        assert_eq!(expand(old), old);
    }
}
