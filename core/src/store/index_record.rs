//! A session's record in the search index (the shard's `records` hash, under the session's short
//! id): the version of the state it was computed from and the terms it is in, which the next
//! write drops and a page's required terms are checked against.
//!
//! Written as a JSON array `[lastSequence, updatedAt, scope, code…]` with one short code a term
//! (`s1` for `status:suspended_client_tool`, `g<agent>`, `u<user>`, `t<tag>`, `m<key=value>`, `w`
//! for awaiting), about 45 bytes for a suspended session instead of about 110. A record written
//! before (`{"v":[seq,updatedAt],"k":["root:status:…",…]}`, the terms' key names) is read as
//! it is, by this file and by `index_page.lua`/`index_write.lua`, and replaced by the next write.

use serde::Deserialize;

/// The statuses' codes (`s<digit>`): fixed, records hold them. A status not here is `s:<text>`.
const STATUS_CODES: [(&str, char); 5] = [
    ("active", '0'),
    ("suspended_client_tool", '1'),
    ("completed", '2'),
    ("failed", '3'),
    ("interrupted", '4'),
];

/// The term kinds' codes, by the prefix of their text.
const KIND_CODES: [(&str, char); 4] = [
    ("agent:", 'g'),
    ("user:", 'u'),
    ("tag:", 't'),
    ("meta:", 'm'),
];

/// A record: its version and its terms' key names' last parts (`<scope>:<term>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Record {
    /// `lastSequence` and `updatedAt` of the state.
    pub v: (u64, u64),
    pub k: Vec<String>,
}

/// The form written before the short codes.
#[derive(Deserialize)]
struct OldRecord {
    v: (u64, u64),
    k: Vec<String>,
}

/// A term's code, from its text (`status:active`, `agent:a`, `awaiting`, `all`).
pub(super) fn code_of(term: &str) -> String {
    match term {
        "all" => return "a".to_owned(),
        "awaiting" => return "w".to_owned(),
        _ => {}
    }
    if let Some(status) = term.strip_prefix("status:") {
        return match STATUS_CODES.iter().find(|(text, _)| *text == status) {
            Some((_, code)) => format!("s{code}"),
            None => format!("s:{status}"),
        };
    }
    for (prefix, code) in KIND_CODES {
        if let Some(rest) = term.strip_prefix(prefix) {
            return format!("{code}{rest}");
        }
    }
    // No term is written otherwise; kept whole behind a mark of its own.
    format!("x{term}")
}

/// A term's text from its code; `None` for a code that is not one.
fn term_of(code: &str) -> Option<String> {
    let mut chars = code.chars();
    let kind = chars.next()?;
    let rest = chars.as_str();
    Some(match kind {
        'a' if rest.is_empty() => "all".to_owned(),
        'w' if rest.is_empty() => "awaiting".to_owned(),
        's' => match rest.strip_prefix(':') {
            Some(status) => format!("status:{status}"),
            None => {
                let digit = rest.chars().next()?;
                let (status, _) = STATUS_CODES.iter().find(|(_, code)| *code == digit)?;
                format!("status:{status}")
            }
        },
        'x' => rest.to_owned(),
        _ => {
            let (prefix, _) = KIND_CODES.iter().find(|(_, code)| *code == kind)?;
            format!("{prefix}{rest}")
        }
    })
}

impl Record {
    /// The stored text. Every key of a record has the same scope (`root` or `child`).
    pub(super) fn encode(&self) -> String {
        let scope = self
            .k
            .first()
            .and_then(|key| key.split_once(':'))
            .map_or("root", |(scope, _)| scope);
        let mut fields = vec![
            serde_json::Value::from(self.v.0),
            serde_json::Value::from(self.v.1),
            serde_json::Value::from(scope),
        ];
        fields.extend(self.k.iter().map(|key| {
            let term = key.split_once(':').map_or(key.as_str(), |(_, term)| term);
            serde_json::Value::from(code_of(term))
        }));
        serde_json::Value::Array(fields).to_string()
    }

    /// A stored record, in either form.
    pub(super) fn decode(text: &str) -> Result<Self, String> {
        if text.starts_with('{') {
            let old: OldRecord = serde_json::from_str(text).map_err(|e| e.to_string())?;
            return Ok(Self { v: old.v, k: old.k });
        }
        let fields: Vec<serde_json::Value> =
            serde_json::from_str(text).map_err(|e| e.to_string())?;
        let number = |at: usize| fields.get(at).and_then(serde_json::Value::as_u64);
        let (Some(sequence), Some(updated), Some(scope)) =
            (number(0), number(1), fields.get(2).and_then(|f| f.as_str()))
        else {
            return Err("a record without its version and scope".to_owned());
        };
        let k = fields[3..]
            .iter()
            .map(|code| {
                code.as_str()
                    .and_then(term_of)
                    .map(|term| format!("{scope}:{term}"))
                    .ok_or_else(|| format!("a record's term {code} is not a code"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            v: (sequence, updated),
            k,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Record;

    #[test]
    fn a_record_round_trips_and_the_old_form_reads() {
        let record = Record {
            v: (3, 1_764_000_000_000),
            k: [
                "status:suspended_client_tool",
                "agent:million_ask",
                "user:u-1",
                "tag:vip:gold",
                "meta:plan=pro",
                "awaiting",
                "status:weird",
            ]
            .iter()
            .map(|term| format!("root:{term}"))
            .collect(),
        };
        let text = record.encode();
        assert!(text.len() < 100, "{text}");
        assert_eq!(Record::decode(&text).unwrap(), record);
        let old = r#"{"v":[3,1764000000000],"k":["child:all","child:status:active"]}"#;
        assert_eq!(
            Record::decode(old).unwrap(),
            Record {
                v: (3, 1_764_000_000_000),
                k: vec!["child:all".into(), "child:status:active".into()]
            }
        );
        assert!(Record::decode("[1]").is_err());
    }
}
