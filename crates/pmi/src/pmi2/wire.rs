//! The PMI-2 wire format (MPICH's `pmi-2.0` message protocol, spoken by Slurm's
//! `srun --mpi=pmi2` and MPICH's hydra over the socket named by `PMI_FD`).
//!
//! ```text
//!  init (PMI-1 style, one line):  cmd=init pmi_version=2 pmi_subversion=0\n
//!  its answer:                    cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n
//!  every later command:           "    38" "cmd=kvs-get;jobid=j;srcid=3;key=nf.host.3;"
//!                                  ^ 6 characters: the body's length in decimal, space-padded
//! ```
//! A body is `key=value;` pairs, the first being `cmd=NAME`; a `;` inside a value is
//! written `;;`. Answers carry `rc` (0 = success) and, on failure, `errmsg`.
//! Limits (MPICH's): keys up to [`MAX_KEY_LEN`] bytes, values up to
//! [`MAX_VALUE_LEN`], a body up to [`MAX_BODY_LEN`]; anything longer is refused
//! before it is allocated.

/// Characters of the length prefix.
pub const LEN_DIGITS: usize = 6;
/// Longest body accepted (MPICH's `PMII_MAX_COMMAND_LEN`).
pub const MAX_BODY_LEN: usize = 64 * 1024;
/// Longest key (MPICH's `PMI2_MAX_KEYLEN`).
pub const MAX_KEY_LEN: usize = 64;
/// Longest value (MPICH's `PMI2_MAX_VALLEN`).
pub const MAX_VALUE_LEN: usize = 1024;
/// Longest PMI-1 style line accepted (the init answer).
pub const MAX_LINE_LEN: usize = 1024;

/// One command or answer: its name and its other pairs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The value of `cmd`.
    pub name: String,
    /// The pairs after `cmd`.
    pub pairs: Vec<(String, String)>,
}

impl Command {
    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The whole message for command `name` with `pairs`: length prefix and body.
pub fn encode(name: &str, pairs: &[(&str, &str)]) -> Vec<u8> {
    let mut body = format!("cmd={name};");
    for (k, v) in pairs {
        body.push_str(k);
        body.push('=');
        body.push_str(&v.replace(';', ";;"));
        body.push(';');
    }
    let mut msg = format!("{:>LEN_DIGITS$}", body.len()).into_bytes();
    msg.extend_from_slice(body.as_bytes());
    msg
}

/// The body length announced by a length prefix, checked against [`MAX_BODY_LEN`].
pub fn decode_len(prefix: &[u8; LEN_DIGITS]) -> Result<usize, String> {
    let text =
        std::str::from_utf8(prefix).map_err(|_| format!("length prefix {prefix:?} is not text"))?;
    let len: usize = text
        .trim()
        .parse()
        .map_err(|_| format!("length prefix {text:?} is not a number"))?;
    if len == 0 || len > MAX_BODY_LEN {
        return Err(format!(
            "announced body of {len} B is outside 1..={MAX_BODY_LEN} B"
        ));
    }
    Ok(len)
}

/// Parses a body (without its length prefix).
pub fn decode(body: &[u8]) -> Result<Command, String> {
    let text = std::str::from_utf8(body).map_err(|_| "body is not UTF-8".to_owned())?;
    let mut pairs = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let eq = rest
            .find('=')
            .ok_or_else(|| format!("pair {rest:?} has no '='"))?;
        let key = &rest[..eq];
        if key.is_empty() || key.len() > MAX_KEY_LEN || key.contains(';') {
            return Err(format!("bad key {key:?}"));
        }
        let (value, after) = take_value(&rest[eq + 1..])
            .ok_or_else(|| format!("value of {key:?} is not terminated by ';'"))?;
        if value.len() > MAX_VALUE_LEN {
            return Err(format!(
                "value of {key:?} is {} B, over {MAX_VALUE_LEN} B",
                value.len()
            ));
        }
        pairs.push((key.to_owned(), value));
        rest = after;
    }
    let mut pairs = pairs.into_iter();
    match pairs.next() {
        Some((k, name)) if k == "cmd" => Ok(Command {
            name,
            pairs: pairs.collect(),
        }),
        _ => Err("the first pair is not cmd=…".into()),
    }
}

/// The value at the start of `s` (up to a single `;`, with `;;` unescaped), and what
/// follows its `;`.
fn take_value(s: &str) -> Option<(String, &str)> {
    let bytes = s.as_bytes();
    let mut value = String::new();
    let mut i = 0;
    let mut start = 0;
    while i < bytes.len() {
        if bytes[i] == b';' {
            if bytes.get(i + 1) == Some(&b';') {
                value.push_str(&s[start..=i]);
                i += 2;
                start = i;
                continue;
            }
            value.push_str(&s[start..i]);
            return Some((value, &s[i + 1..]));
        }
        i += 1;
    }
    None
}

/// The PMI-1 style init line that opens the conversation.
pub fn init_line() -> &'static [u8] {
    b"cmd=init pmi_version=2 pmi_subversion=0\n"
}

/// Parses a PMI-1 style line (`key=value` words separated by spaces, no newline).
pub fn decode_line(line: &str) -> Result<Command, String> {
    let mut words = line.split_whitespace().map(|w| {
        w.split_once('=')
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .ok_or_else(|| format!("word {w:?} has no '='"))
    });
    match words.next().transpose()? {
        Some((k, name)) if k == "cmd" => Ok(Command {
            name,
            pairs: words.collect::<Result<_, _>>()?,
        }),
        _ => Err(format!("line {line:?} does not start with cmd=")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_with_escaped_semicolons() {
        let msg = encode("kvs-put", &[("key", "a;b"), ("value", ";;x;")]);
        let (prefix, body) = msg.split_at(LEN_DIGITS);
        assert_eq!(decode_len(prefix.try_into().unwrap()).unwrap(), body.len());
        let cmd = decode(body).unwrap();
        assert_eq!(cmd.name, "kvs-put");
        assert_eq!(cmd.get("key"), Some("a;b"));
        assert_eq!(cmd.get("value"), Some(";;x;"));
        assert_eq!(&msg[..LEN_DIGITS], format!("{:>6}", body.len()).as_bytes());
    }

    #[test]
    fn malformed_bodies_and_lengths_are_refused() {
        for bad in [
            &b"key=v;"[..],
            b"cmd=x;novalue;",
            b"cmd=x;k=unterminated",
            b"=v;cmd=x;",
            b"\xff\xfe",
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
        let long = format!("cmd=x;k={};", "v".repeat(MAX_VALUE_LEN + 1));
        assert!(decode(long.as_bytes()).is_err());
        for bad in [b"     0", b"999999", b"  12x4", b"-00001"] {
            assert!(decode_len(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn init_answers_parse() {
        let c = decode_line("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0").unwrap();
        assert_eq!(
            (c.name.as_str(), c.get("rc")),
            ("response_to_init", Some("0"))
        );
        assert!(decode_line("rc=0 cmd=x").is_err());
        assert!(decode_line("cmd=x junk").is_err());
    }
}
