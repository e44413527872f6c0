//! Escaping what users write before it is shown in a line others read (`/xcpu/procs`,
//! `state`, `/log`), so nobody can forge a line or move a reader's terminal.
//!
//! Escapes are `/proc/mounts`'s: a byte as a backslash and three octal digits.
//!
//! | function | escapes | for |
//! |---|---|---|
//! | [`field`] | control characters (C0, DEL, C1), space, backslash | one space-separated field: it stays one field, and decodes back unambiguously |
//! | [`text`] | control characters | free text that ends its line (a `state` error): spaces kept, no line break, no terminal escape |

/// `s` as one space-free field (see the module docs); empty stays empty.
pub fn field(s: &str) -> String {
    escape(s, |c| c.is_control() || c == ' ' || c == '\\')
}

/// `s` as free text on one line (see the module docs).
pub fn text(s: &str) -> String {
    escape(s, char::is_control)
}

fn escape(s: &str, special: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if special(c) {
            let mut utf8 = [0u8; 4];
            for b in c.encode_utf8(&mut utf8).bytes() {
                out.push_str(&format!("\\{b:03o}"));
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_breaks_a_line_or_a_field() {
        assert_eq!(field("a b\\c\n0 root"), "a\\040b\\134c\\0120\\040root");
        assert_eq!(field("\u{9b}[2K\x7f"), "\\302\\233[2K\\177");
        assert_eq!(field("plain/é"), "plain/é");
        assert_eq!(text("exec a b\n0 root\r"), "exec a b\\0120 root\\015");
    }
}
