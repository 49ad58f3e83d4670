//! The preset rules and the checks that tell a real card number or IBAN from digits that only
//! look like one.
//!
//! Word boundaries are ASCII ones (`(?-u:\b)`) and digits `[0-9]`, so that the streaming
//! matcher can follow every preset through any text, Unicode included.

use super::Rule;
use super::engine::Check;
use std::net::{Ipv4Addr, Ipv6Addr};

/// A named set of rules.
///
/// ```
/// use processors::builtins::regex_filter::Preset;
/// let names: Vec<String> = Preset::Pii.rules().iter().map(|r| r.name().to_owned()).collect();
/// assert_eq!(
///     names,
///     ["email", "ssn", "credit-card", "iban", "ip-address", "date-of-birth", "phone"]
/// );
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Preset {
    /// Personal data: `email`, `ssn` (US Social Security numbers and ITINs, `536-22-1847`,
    /// or `536 22 1847` and nine digits after `SSN`, checked against the SSA's rules:
    /// [`is_ssn`]), `credit-card` (Luhn-checked, issuer digits 2–6),
    /// `iban` (mod-97 checked), `ip-address` (IPv4, and IPv6 with at least three groups),
    /// `date-of-birth` (a date after words that say it is one: `DOB: 04/12/1987`, `born on
    /// 12 March 1987`, `Geburtsdatum 04.12.1987`, `né le 04/12/1987`, `fecha de nacimiento`,
    /// `data di nascita`; the words are redacted with the date), `phone` (international `+…`, North American `(415) 555-0100`, and national numbers
    /// with a leading 0 and separators, such as `020 7946 0958` and `07700 900123`).
    Pii,
    /// Credentials: `anthropic-api-key`, `openai-api-key` (`sk-…`), `aws-access-key-id`
    /// (`AKIA…`), `aws-secret-access-key` (when assigned to a name saying so),
    /// `github-token` (`ghp_…`, `github_pat_…`), `slack-token` (`xoxb-…`), `slack-webhook`,
    /// `google-api-key` (`AIza…`), `stripe-secret-key` (`sk_live_…`), `jwt`, and
    /// `private-key` (a PEM block, to its end marker or to the end of the text).
    Secrets,
    /// Links: `url` (`http`, `https`, `ftp`, and `www.` addresses; trailing punctuation is
    /// left out).
    Urls,
}

impl Preset {
    /// The preset's rules, in priority order (where two match at one place, the first wins).
    pub fn rules(self) -> Vec<Rule> {
        let table: Table = match self {
            Preset::Pii => PII,
            Preset::Secrets => SECRETS,
            Preset::Urls => URLS,
        };
        table
            .iter()
            .map(|&(name, pattern, check)| {
                let rule = Rule::new(name, pattern);
                match check {
                    Some(f) => rule.validate(f),
                    None => rule,
                }
            })
            .collect()
    }
}

/// Rules as name, pattern and check.
type Table = &'static [(&'static str, &'static str, Option<Check>)];

const PII: Table = &[
    (
        "email",
        r"(?-u:\b)[A-Za-z0-9._%+-]{1,64}@(?:[A-Za-z0-9-]+\.)+[A-Za-z]{2,24}(?-u:\b)",
        None,
    ),
    (
        "ssn",
        concat!(
            r"(?-u:\b)[0-9]{3}-[0-9]{2}-[0-9]{4}(?-u:\b)",
            r"|(?-u:\b)(?i:ssn|itin|social security(?: number| no\.?| #)?)[ \t]*(?:is|:|#|=)?[ \t]*",
            r"(?:[0-9]{3} [0-9]{2} [0-9]{4}|[0-9]{9})(?-u:\b)",
        ),
        Some(is_ssn),
    ),
    (
        "credit-card",
        r"(?-u:\b)[2-6][0-9](?:[ -]?[0-9]){11,17}(?-u:\b)",
        Some(is_card_number),
    ),
    (
        "iban",
        r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?-u:\b)",
        Some(is_iban),
    ),
    (
        "ip-address",
        concat!(
            r"(?-u:\b)(?:(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])(?-u:\b)",
            r"|(?-u:\b)(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?-u:\b)",
            r"|(?-u:\b)(?:[0-9A-Fa-f]{1,4}:){1,6}(?::[0-9A-Fa-f]{1,4}){1,6}(?-u:\b)",
        ),
        Some(is_ip_address),
    ),
    (
        "date-of-birth",
        concat!(
            r"(?i:(?-u:\b)(?:date of birth|d\.o\.b\.?|dob|born(?: on)?|birth ?date|birthday",
            r"|geburtsdatum|geboren(?: am)?|date de naissance|n[ée]e? le|fecha de nacimiento",
            r"|nacid[oa] el|data di nascita|nat[oa] il)[ \t]*(?:is|:|-|=)?[ \t]*",
            r"(?:[0-9]{1,2}[./-][0-9]{1,2}[./-](?:[0-9]{4}|[0-9]{2})|[0-9]{4}-[0-9]{2}-[0-9]{2}",
            r"|(?:[0-9]{1,2}(?:st|nd|rd|th)?\.? (?:of )?)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?,? (?:[0-9]{1,2}(?:st|nd|rd|th)?,? )?[0-9]{4})(?-u:\b))",
        ),
        None,
    ),
    (
        "phone",
        concat!(
            r"\+[1-9][0-9]{0,3}(?:[ .-]?(?:\([0-9]{1,4}\)|[0-9]{1,4})){1,6}(?-u:\b)",
            r"|\([2-9][0-9]{2}\) ?[2-9][0-9]{2}[ .-][0-9]{4}(?-u:\b)",
            r"|(?-u:\b)[2-9][0-9]{2}[ .-][2-9][0-9]{2}[ .-][0-9]{4}(?-u:\b)",
            r"|(?-u:\b)0[1-9][0-9]{0,3}(?:[ .-][0-9]{2,4}){2,4}(?-u:\b)",
            r"|(?-u:\b)0[1-9][0-9]{3}[ .-][0-9]{6}(?-u:\b)",
        ),
        Some(is_phone_number),
    ),
];

const SECRETS: Table = &[
    (
        "anthropic-api-key",
        r"(?-u:\b)sk-ant-[A-Za-z0-9_-]{20,}",
        None,
    ),
    ("openai-api-key", r"(?-u:\b)sk-[A-Za-z0-9_-]{20,}", None),
    (
        "aws-access-key-id",
        r"(?-u:\b)(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}(?-u:\b)",
        None,
    ),
    (
        "aws-secret-access-key",
        r#"(?i:aws_?secret_?access_?key|aws_?secret)["']?[ \t]*[:=][ \t]*["']?[A-Za-z0-9/+]{40}"#,
        None,
    ),
    (
        "github-token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
        None,
    ),
    (
        "slack-token",
        r"(?-u:\b)xox[abposr]-[A-Za-z0-9-]{10,}",
        None,
    ),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9_/-]{20,}",
        None,
    ),
    ("google-api-key", r"(?-u:\b)AIza[0-9A-Za-z_-]{35}", None),
    (
        "stripe-secret-key",
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}",
        None,
    ),
    (
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*",
        None,
    ),
    (
        "private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?s:.)*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\z)",
        None,
    ),
];

const URLS: Table = &[(
    "url",
    r#"(?-u:\b)(?:(?i:https?|ftp)://|www\.)[^\s<>"'`]*[^\s<>"'`.,;:!?)\]}]"#,
    None,
)];

/// The digits of `s`, as numbers.
fn digits(s: &str) -> impl Iterator<Item = u32> + '_ {
    s.chars().filter_map(|c| c.to_digit(10))
}

/// Whether the last nine digits of `s` are a US taxpayer number in the shape of a Social
/// Security number: area 001 to 999 but 666, group 01 to 99, serial 0001 to 9999, and none of
/// the numbers known never to be issued (`078-05-1120`, `219-09-9999`, `123-45-6789`, nine
/// equal digits). Areas 900 to 999 are never SSNs but are ITINs (taxpayer numbers given to
/// those who cannot have an SSN) and numbers written like them, as sensitive: they are kept.
///
/// ```
/// use processors::builtins::regex_filter::is_ssn;
/// assert!(is_ssn("536-22-1847"));
/// assert!(is_ssn("935-26-7902")); // an ITIN's shape
/// assert!(!is_ssn("666-22-1847"));
/// assert!(!is_ssn("536-00-1847"));
/// ```
pub fn is_ssn(s: &str) -> bool {
    let all: Vec<u32> = digits(s).collect();
    let Some(d) = all.len().checked_sub(9).map(|at| &all[at..]) else {
        return false;
    };
    let number = |ds: &[u32]| ds.iter().fold(0, |n, d| n * 10 + d);
    let (area, group, serial) = (number(&d[..3]), number(&d[3..5]), number(&d[5..]));
    let whole = number(d);
    area != 0
        && area != 666
        && group != 0
        && serial != 0
        && ![78_051_120, 219_099_999, 123_456_789].contains(&whole)
        && !d.iter().all(|&x| x == d[0])
}

/// Whether `s` is a payment card number: 13 to 19 digits, issuer digit 2 to 6, and a valid
/// Luhn check digit. Spaces and dashes between digits are ignored.
///
/// ```
/// use processors::builtins::regex_filter::is_card_number;
/// assert!(is_card_number("4111 1111 1111 1111"));
/// assert!(!is_card_number("4111 1111 1111 1112"));
/// ```
pub fn is_card_number(s: &str) -> bool {
    let count = digits(s).count();
    if !(13..=19).contains(&count) || !matches!(digits(s).next(), Some(2..=6)) {
        return false;
    }
    let sum: u32 = s
        .chars()
        .rev()
        .filter_map(|c| c.to_digit(10))
        .enumerate()
        .map(|(i, d)| match i % 2 {
            1 if d * 2 > 9 => d * 2 - 9,
            1 => d * 2,
            _ => d,
        })
        .sum();
    sum.is_multiple_of(10)
}

/// Whether `s` is an IBAN: a country code, check digits and 11 to 30 letters or digits (15 to
/// 34 in all) whose ISO 7064 mod-97 check holds. Spaces are ignored.
///
/// ```
/// use processors::builtins::regex_filter::is_iban;
/// assert!(is_iban("DE89 3704 0044 0532 0130 00"));
/// assert!(!is_iban("DE88 3704 0044 0532 0130 00"));
/// ```
pub fn is_iban(s: &str) -> bool {
    let chars: Vec<char> = s.chars().filter(|c| *c != ' ').collect();
    if !(15..=34).contains(&chars.len())
        || !chars[..2].iter().all(char::is_ascii_uppercase)
        || !chars[2..4].iter().all(char::is_ascii_digit)
        || !chars.iter().all(char::is_ascii_alphanumeric)
    {
        return false;
    }
    // The first four characters go to the end; letters count as 10 to 35.
    let mut rest = 0u32;
    for c in chars[4..].iter().chain(&chars[..4]) {
        let Some(v) = c.to_ascii_uppercase().to_digit(36) else {
            return false;
        };
        rest = match v {
            0..=9 => (rest * 10 + v) % 97,
            _ => (rest * 100 + v) % 97,
        };
    }
    rest == 1
}

/// Whether `s` is an IPv4 address, or an IPv6 address written with at least three groups (so
/// that `a::b` in code is not taken for one).
fn is_ip_address(s: &str) -> bool {
    if s.parse::<Ipv4Addr>().is_ok() {
        return true;
    }
    s.parse::<Ipv6Addr>().is_ok() && s.split(':').filter(|g| !g.is_empty()).count() >= 3
}

/// Whether `s` has as many digits as its shape needs: 8 to 15 after `+` (E.164), 9 to 12 for
/// a national number with a leading 0, 10 for a North American one.
fn is_phone_number(s: &str) -> bool {
    let count = digits(s).count();
    match s.as_bytes().first() {
        Some(b'+') => (8..=15).contains(&count),
        Some(b'0') => (9..=12).contains(&count),
        _ => count == 10,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_numbers_need_luhn_and_an_issuer_digit() {
        for ok in [
            "4111111111111111",
            "4111-1111-1111-1111",
            "5500 0000 0000 0004",
            "3782 822463 10005",
            "6011111111111117",
        ] {
            assert!(is_card_number(ok), "{ok}");
        }
        for bad in [
            "4111111111111112",
            "1111111111111117",
            "411111111111",
            "41111111111111111111",
        ] {
            assert!(!is_card_number(bad), "{bad}");
        }
    }

    #[test]
    fn ibans_need_their_check_digits() {
        for ok in [
            "GB82 WEST 1234 5698 7654 32",
            "NL91ABNA0417164300",
            "FR1420041010050500013M02606",
        ] {
            assert!(is_iban(ok), "{ok}");
        }
        for bad in [
            "GB82 WEST 1234 5698 7654 33",
            "GB82",
            "gb82west12345698765432",
        ] {
            assert!(!is_iban(bad), "{bad}");
        }
    }

    #[test]
    fn bi_97_ssns_follow_the_ssa_rules() {
        for ok in [
            "536-22-1847",
            "001-01-0001",
            "899 99 9999",
            "935-26-7902",
            "SSN: 536221847",
        ] {
            assert!(is_ssn(ok), "{ok}");
        }
        for bad in [
            "000-22-1847",
            "666-22-1847",
            "536-00-1847",
            "536-22-0000",
            "123-45-6789",
            "078-05-1120",
            "111-11-1111",
            "53622184",
        ] {
            assert!(!is_ssn(bad), "{bad}");
        }
    }

    /// The preset's rule `name` finds exactly `expected` in `text`.
    fn finds(name: &str, text: &str, expected: &[&str]) {
        use crate::regex_filter::{RegexFilter, Strategy};
        let filter = RegexFilter::builder()
            .preset(Preset::Pii)
            .preset(Preset::Secrets)
            .strategy(Strategy::Redact(crate::redact::Redaction::Hash))
            .build()
            .unwrap();
        let found = filter.find(text);
        let of_rule: Vec<&str> = found
            .iter()
            .filter(|m| m.rule == name)
            .map(|m| &text[m.start..m.end])
            .collect();
        assert_eq!(of_rule, expected, "{name} in {text:?}: {found:?}");
    }

    #[test]
    fn bi_97_each_rule_finds_valid_values_and_leaves_invalid_ones() {
        finds(
            "ssn",
            "my SSN is 536-22-1847, and SSN 536 22 1848",
            &["536-22-1847", "SSN 536 22 1848"],
        );
        // Spaced digits and a word that ends in a keyword are not numbers of that kind.
        finds("ssn", "sizes 512 64 1024, waitin 536221847", &[]);
        finds("ssn", "ssn 536221847", &["ssn 536221847"]);
        finds(
            "ssn",
            "order 666-22-1847 and 123-45-6789 and 536-221-847",
            &[],
        );
        finds("date-of-birth", "DOB: 04/12/1987.", &["DOB: 04/12/1987"]);
        finds(
            "date-of-birth",
            "she was born on 12 March 1987",
            &["born on 12 March 1987"],
        );
        finds(
            "date-of-birth",
            "Date of birth - 1987-03-12",
            &["Date of birth - 1987-03-12"],
        );
        finds(
            "date-of-birth",
            "Geburtsdatum: 04.12.1987",
            &["Geburtsdatum: 04.12.1987"],
        );
        finds("date-of-birth", "the meeting is on 04/12/1987", &[]);
        finds(
            "date-of-birth",
            "BORN ON 12 MARCH 1987",
            &["BORN ON 12 MARCH 1987"],
        );
        finds("date-of-birth", "né le 04/12/1987", &["né le 04/12/1987"]);
        finds(
            "date-of-birth",
            "Contrat signé le 12/03/2024, ordinato il 12/03/2024, stubborn 12/03/2024",
            &[],
        );
        finds(
            "email",
            "mail jane.doe+x@mail.example.co.uk now",
            &["jane.doe+x@mail.example.co.uk"],
        );
        finds("email", "not@an-address and user@localhost", &[]);
        finds(
            "credit-card",
            "card 4111 1111 1111 1111 ok",
            &["4111 1111 1111 1111"],
        );
        finds("credit-card", "card 4111 1111 1111 1112", &[]);
        finds(
            "iban",
            "IBAN DE89 3704 0044 0532 0130 00",
            &["DE89 3704 0044 0532 0130 00"],
        );
        finds("iban", "IBAN DE88 3704 0044 0532 0130 00", &[]);
        finds(
            "phone",
            "call +44 20 7946 0958 or (415) 555-0100",
            &["+44 20 7946 0958", "(415) 555-0100"],
        );
        finds(
            "phone",
            "national 020 7946 0958, version 1.2.3",
            &["020 7946 0958"],
        );
        finds(
            "ip-address",
            "from 203.0.113.7 and 2001:db8::1",
            &["203.0.113.7", "2001:db8::1"],
        );
        finds("ip-address", "version 999.1.1.1 and a::b", &[]);
        finds(
            "aws-access-key-id",
            "key AKIAIOSFODNN7EXAMPLE",
            &["AKIAIOSFODNN7EXAMPLE"],
        );
        finds(
            "github-token",
            "t ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            &["ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
        );
        finds(
            "slack-token",
            "xoxb-1234567890-abcdefghij",
            &["xoxb-1234567890-abcdefghij"],
        );
        finds(
            "openai-api-key",
            "sk-proj-abcdefghijklmnopqrst1234",
            &["sk-proj-abcdefghijklmnopqrst1234"],
        );
        finds(
            "anthropic-api-key",
            "sk-ant-api03-abcdefghijklmnopqrstu",
            &["sk-ant-api03-abcdefghijklmnopqrstu"],
        );
        finds(
            "google-api-key",
            "AIzaSyA1234567890abcdefghijklmnopqrstuv",
            &["AIzaSyA1234567890abcdefghijklmnopqrstuv"],
        );
        finds(
            "stripe-secret-key",
            "sk_live_abcdefghijklmnop1234",
            &["sk_live_abcdefghijklmnop1234"],
        );
        finds(
            "jwt",
            "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl",
            &["eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"],
        );
        finds("jwt", "eyJ.eyJ.x", &[]);
        finds(
            "private-key",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- after",
            &["-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----"],
        );
    }

    #[test]
    fn ipv6_needs_three_groups() {
        assert!(is_ip_address("2001:db8::1"));
        assert!(is_ip_address("10.0.0.1"));
        assert!(!is_ip_address("a::b"));
        assert!(!is_ip_address("dead::beef::1"));
    }

    #[test]
    fn phone_digit_counts_follow_the_shape() {
        assert!(is_phone_number("+1 415 555 0100"));
        assert!(is_phone_number("(415) 555-0100"));
        assert!(is_phone_number("020 7946 0958"));
        assert!(is_phone_number("07700 900123"));
        assert!(!is_phone_number("01.02.2024"));
        assert!(!is_phone_number("+1 2"));
    }
}
