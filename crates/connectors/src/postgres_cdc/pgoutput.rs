//! Decoding the row messages of PostgreSQL's `pgoutput` plugin (protocol version 1).
//!
//! The replication client hands over each message's bytes; `Begin` and `Commit` it decodes
//! itself. The rest follow "Logical Replication Message Formats" of the PostgreSQL manual:
//! `Relation` describes a table's columns (by oid) before its first row in a session (and again
//! after it changes), `Insert`/`Update`/`Delete` carry tuples whose values are in text
//! format, `Truncate` names the emptied tables. Other messages (`Type`, `Origin`, logical
//! messages) are of no use to a source and are decoded as [`Message::Other`].

/// A decoded `pgoutput` message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Message {
    /// The columns of a table, sent before rows of it.
    Relation(Relation),
    /// A new row.
    Insert {
        /// The table's relation id.
        relation: u32,
        /// The row.
        new: Tuple,
    },
    /// A changed row.
    Update {
        /// The table's relation id.
        relation: u32,
        /// The old row: its replica identity (`K`) if the key changed, or all of it (`O`)
        /// under `REPLICA IDENTITY FULL`; `None` otherwise.
        old: Option<Tuple>,
        /// The new row.
        new: Tuple,
    },
    /// A deleted row: its replica identity, or all of it under `REPLICA IDENTITY FULL`.
    Delete {
        /// The table's relation id.
        relation: u32,
        /// The old row.
        old: Tuple,
    },
    /// Tables that were emptied.
    Truncate {
        /// Their relation ids.
        relations: Vec<u32>,
    },
    /// A message a source does not use.
    Other,
}

/// A table as a `Relation` message describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Relation {
    /// Its relation id (the table's oid).
    pub id: u32,
    /// Its columns' names, in the order of the tuples' values.
    pub columns: Vec<String>,
}

/// The values of one row, in the order of the relation's columns.
pub(crate) type Tuple = Vec<TupleValue>;

/// One value of a tuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TupleValue {
    /// SQL NULL.
    Null,
    /// A TOASTed value that did not change and was not sent.
    Unchanged,
    /// The value in its type's text output format.
    Text(String),
}

/// Decodes one message.
pub(crate) fn decode(bytes: &[u8]) -> Result<Message, String> {
    let mut reader = Reader { bytes };
    let message = match reader.u8()? {
        b'R' => Message::Relation(reader.relation()?),
        b'I' => {
            let relation = reader.u32()?;
            reader.expect(b'N')?;
            Message::Insert {
                relation,
                new: reader.tuple()?,
            }
        }
        b'U' => {
            let relation = reader.u32()?;
            let old = match reader.u8()? {
                b'K' | b'O' => {
                    let old = reader.tuple()?;
                    reader.expect(b'N')?;
                    Some(old)
                }
                b'N' => None,
                other => return Err(format!("unexpected tuple kind {:?}", other as char)),
            };
            Message::Update {
                relation,
                old,
                new: reader.tuple()?,
            }
        }
        b'D' => {
            let relation = reader.u32()?;
            match reader.u8()? {
                b'K' | b'O' => Message::Delete {
                    relation,
                    old: reader.tuple()?,
                },
                other => return Err(format!("unexpected tuple kind {:?}", other as char)),
            }
        }
        b'T' => {
            let count = reader.u32()?;
            reader.u8()?;
            let relations = (0..count).map(|_| reader.u32()).collect::<Result<_, _>>()?;
            Message::Truncate { relations }
        }
        _ => Message::Other,
    };
    Ok(message)
}

/// Reads big-endian fields off the front of a message.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() < n {
            return Err("message ends early".into());
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn expect(&mut self, tag: u8) -> Result<(), String> {
        match self.u8()? {
            found if found == tag => Ok(()),
            found => Err(format!(
                "expected {:?}, found {:?}",
                tag as char, found as char
            )),
        }
    }

    fn u16(&mut self) -> Result<u16, String> {
        let bytes = self.take(2)?;
        Ok(u16::from_be_bytes([bytes[0], bytes[1]]))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let bytes = self.take(4)?;
        Ok(u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]))
    }

    /// A NUL-terminated string.
    fn string(&mut self) -> Result<String, String> {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == 0)
            .ok_or("unterminated string")?;
        let text = String::from_utf8_lossy(self.take(end)?).into_owned();
        self.take(1)?;
        Ok(text)
    }

    fn relation(&mut self) -> Result<Relation, String> {
        let id = self.u32()?;
        self.string()?;
        self.string()?;
        self.u8()?;
        let count = self.u16()?;
        let columns = (0..count)
            .map(|_| {
                self.u8()?;
                let name = self.string()?;
                self.take(8)?;
                Ok(name)
            })
            .collect::<Result<_, String>>()?;
        Ok(Relation { id, columns })
    }

    fn tuple(&mut self) -> Result<Tuple, String> {
        let count = self.u16()?;
        (0..count)
            .map(|_| match self.u8()? {
                b'n' => Ok(TupleValue::Null),
                b'u' => Ok(TupleValue::Unchanged),
                b't' => {
                    let len = self.u32()? as usize;
                    let bytes = self.take(len)?;
                    String::from_utf8(bytes.to_vec())
                        .map(TupleValue::Text)
                        .map_err(|_| "a text value is not UTF-8".to_string())
                }
                other => Err(format!("unexpected value kind {:?}", other as char)),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text_value(out: &mut Vec<u8>, text: &str) {
        out.push(b't');
        out.extend((text.len() as u32).to_be_bytes());
        out.extend(text.as_bytes());
    }

    #[test]
    fn decodes_a_relation() {
        let mut bytes = vec![b'R'];
        bytes.extend(16384u32.to_be_bytes());
        bytes.extend(b"public\0orders\0");
        bytes.push(b'd');
        bytes.extend(2u16.to_be_bytes());
        for name in ["id", "amount"] {
            bytes.push(1);
            bytes.extend(name.as_bytes());
            bytes.push(0);
            bytes.extend(23u32.to_be_bytes());
            bytes.extend((-1i32).to_be_bytes());
        }
        assert_eq!(
            decode(&bytes).unwrap(),
            Message::Relation(Relation {
                id: 16384,
                columns: vec!["id".into(), "amount".into()],
            })
        );
    }

    #[test]
    fn decodes_an_update_with_its_old_key_and_an_unchanged_value() {
        let mut bytes = vec![b'U'];
        bytes.extend(7u32.to_be_bytes());
        bytes.push(b'K');
        bytes.extend(2u16.to_be_bytes());
        text_value(&mut bytes, "1");
        bytes.push(b'n');
        bytes.push(b'N');
        bytes.extend(2u16.to_be_bytes());
        text_value(&mut bytes, "2");
        bytes.push(b'u');
        assert_eq!(
            decode(&bytes).unwrap(),
            Message::Update {
                relation: 7,
                old: Some(vec![TupleValue::Text("1".into()), TupleValue::Null]),
                new: vec![TupleValue::Text("2".into()), TupleValue::Unchanged],
            }
        );
    }

    #[test]
    fn decodes_a_truncate_and_skips_other_messages() {
        let mut bytes = vec![b'T'];
        bytes.extend(2u32.to_be_bytes());
        bytes.push(0);
        bytes.extend(5u32.to_be_bytes());
        bytes.extend(6u32.to_be_bytes());
        assert_eq!(
            decode(&bytes).unwrap(),
            Message::Truncate {
                relations: vec![5, 6]
            }
        );
        assert_eq!(decode(b"Yxyz").unwrap(), Message::Other);
    }

    #[test]
    fn a_short_message_is_an_error_not_a_panic() {
        assert!(decode(b"I\0\0").is_err());
        assert!(decode(b"").is_err());
        let mut bytes = vec![b'I'];
        bytes.extend(1u32.to_be_bytes());
        bytes.extend(b"N\0\x01t\0\0\0\x09ab");
        assert!(decode(&bytes).is_err());
    }
}
