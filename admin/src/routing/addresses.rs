//! Address lists the way upstream builds and orders them (Java `String` semantics).
//!
//! Upstream sorts an auto-registered group's addresses with `Collections.sort`, i.e. by
//! `String.compareTo`, which compares UTF-16 code units. For ASCII addresses (every real
//! `http://host:port/` address) that is plain byte order; it differs from Rust's `str` order
//! only for text with characters outside the Basic Multilingual Plane, where UTF-16 surrogates
//! (0xD800..) sort below U+E000..U+FFFF while UTF-8 sorts them above. Routing results depend
//! on list positions, so we reproduce Java's order exactly.

use std::cmp::Ordering;

/// Java's `String.compareTo`: lexicographic over UTF-16 code units.
pub fn java_string_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Sorts addresses like upstream's registry monitor (`Collections.sort`, stable).
pub fn sort_addresses(addresses: &mut [String]) {
    addresses.sort_by(|a, b| java_string_cmp(a, b));
}

/// Splits a group's `address_list` column like upstream's `address_list.split(",")`.
///
/// Java's `split` drops trailing empty strings but keeps inner and leading ones, and a blank
/// column means "no addresses" (upstream checks `StringUtils.hasText` first).
pub fn split_address_list(column: &str) -> Vec<String> {
    if column.trim().is_empty() {
        return Vec::new();
    }
    let mut parts: Vec<String> = column.split(',').map(str::to_owned).collect();
    while parts.last().is_some_and(String::is_empty) {
        parts.pop();
    }
    parts
}

/// Java's `String.hashCode`: `h = 31 * h + c` over UTF-16 code units, wrapping in 32 bits.
///
/// Needed to reproduce `HashMap` iteration order, which breaks LFU ties upstream.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| h.wrapping_mul(31).wrapping_add(i32::from(unit)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_order_differs_from_utf8_outside_the_bmp() {
        // U+1F600 is a surrogate pair (0xD83D ..) in UTF-16, U+FF21 is one unit 0xFF21.
        let emoji = "\u{1F600}";
        let fullwidth = "\u{FF21}";
        assert_eq!(java_string_cmp(emoji, fullwidth), Ordering::Less);
        assert_eq!(emoji.cmp(fullwidth), Ordering::Greater);
    }

    #[test]
    fn hash_matches_java() {
        // Values of "".hashCode(), "a".hashCode(), "hello".hashCode() in Java.
        assert_eq!(java_string_hash(""), 0);
        assert_eq!(java_string_hash("a"), 97);
        assert_eq!(java_string_hash("hello"), 99_162_322);
        // Overflow wraps: "polygenelubricants".hashCode() == Integer.MIN_VALUE.
        assert_eq!(java_string_hash("polygenelubricants"), i32::MIN);
    }

    #[test]
    fn split_like_java() {
        assert_eq!(split_address_list(""), Vec::<String>::new());
        assert_eq!(split_address_list("a,b,,"), vec!["a", "b"]);
        assert_eq!(split_address_list(",a"), vec!["", "a"]);
    }
}
