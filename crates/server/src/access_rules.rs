//! Host-based access rules: which authentication method a connection must pass, read from a rule
//! file written like PostgreSQL 15's `pg_hba.conf`
//! (<https://www.postgresql.org/docs/15/auth-pg-hba-conf.html>).
//!
//! Each record names a connection type, databases, users, a client address range and a method;
//! the first record that matches a connection decides, and a connection no record matches is
//! refused. Lines are split into fields as PostgreSQL's `hba.c` does: `#` comments, double
//! quotes (a quoted keyword is a plain name, `""` inside quotes is one `"`), comma-separated
//! lists, and a trailing backslash joining the next line (even inside quotes or comments).
//!
//! Fluxion has no Unix socket, no GSSAPI encryption and no replication connections, so `local`,
//! `hostgssenc` and `hostnogssenc` records and the `replication` database keyword load but never
//! match; the methods and options that only such records could use are accepted there, so a
//! copied `pg_hba.conf` (`local all all peer`) still loads. Features Fluxion lacks everywhere
//! (`samerole`, `+group`, `@file`, `samehost`, host names, other methods, options) are errors at
//! load time rather than rules silently read another way.

use std::iter::Peekable;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::{Path, PathBuf};
use std::str::Chars;

/// How a client must authenticate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AuthMethod {
    /// Admit the client without a password.
    Trust,
    /// Refuse the client.
    Reject,
    /// SCRAM-SHA-256 (also what `md5` means, as in PostgreSQL for SCRAM-stored passwords).
    ScramSha256,
    /// A cleartext password.
    Password,
}

/// What a rule is matched against.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConnectionFacts<'a> {
    /// The client's address (an IPv4-mapped IPv6 address counts as the IPv4 address).
    pub address: IpAddr,
    /// The user name of the startup message.
    pub user: &'a str,
    /// The database name of the startup message.
    pub database: &'a str,
    /// Whether the connection runs over TLS.
    pub tls: bool,
}

/// The access rules in force, in file order.
#[derive(Debug)]
pub(crate) struct AccessRules {
    /// The records that can match a connection; records that never can are not kept.
    rules: Vec<Rule>,
}

/// Why a rule file cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AccessRulesError {
    /// The rule file could not be read.
    #[error("could not read access rule file \"{}\": {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What reading it failed with.
        source: std::io::Error,
    },
    /// A record is malformed or asks for something Fluxion does not offer.
    #[error("{message} (line {line} of access rule file \"{origin}\")")]
    InvalidLine {
        /// The file (or other source) the record came from.
        origin: String,
        /// The line the record starts on, from 1.
        line: usize,
        /// What is wrong, worded as PostgreSQL words it where it has the same complaint.
        message: String,
    },
}

/// The rules in force without a rule file.
const DEFAULT_RULES: &str = "\
host all all 127.0.0.0/8 trust
host all all ::1/128 trust
host all all all scram-sha-256
";

/// Methods PostgreSQL 15 knows that Fluxion does not offer; `local`, `hostgssenc` and
/// `hostnogssenc` records may name them since they never match.
const POSTGRES_ONLY_METHODS: [&str; 9] = [
    "gss", "sspi", "ident", "peer", "pam", "ldap", "radius", "cert", "bsd",
];

impl AccessRules {
    /// Without a rule file: trust on loopback (127.0.0.0/8 and ::1, IPv4-mapped IPv6 loopback
    /// too), scram-sha-256 everywhere else, TLS or not.
    pub(crate) fn default_rules() -> Self {
        Self::parse(DEFAULT_RULES, "built-in rules")
            .expect("invariant: the built-in access rules parse")
    }

    /// Reads the rule file at `path`; errors name the file and line.
    pub(crate) fn load(path: &Path) -> Result<Self, AccessRulesError> {
        let text = std::fs::read_to_string(path).map_err(|source| AccessRulesError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses rule text; `origin` names it in errors (a file path).
    pub(crate) fn parse(text: &str, origin: &str) -> Result<Self, AccessRulesError> {
        let mut rules = Vec::new();
        for (line, record) in logical_lines(text) {
            let invalid = |message| AccessRulesError::InvalidLine {
                origin: origin.to_string(),
                line,
                message,
            };
            let fields = split_fields(&record).map_err(invalid)?;
            if fields.is_empty() {
                continue;
            }
            rules.extend(parse_rule(&fields).map_err(invalid)?);
        }
        Ok(Self { rules })
    }

    /// The method of the first rule that matches, as PostgreSQL picks it; None when no rule
    /// matches (the caller then refuses the client with 28000 "no pg_hba.conf entry for host
    /// ...").
    pub(crate) fn method_for(&self, connection: &ConnectionFacts<'_>) -> Option<AuthMethod> {
        self.rules
            .iter()
            .find(|rule| rule.matches(connection))
            .map(|rule| rule.method)
    }
}

/// One record that can match a connection.
#[derive(Debug)]
struct Rule {
    tls: TlsRequirement,
    databases: Vec<DatabasePattern>,
    users: Vec<UserPattern>,
    address: AddressRange,
    method: AuthMethod,
}

impl Rule {
    /// Whether the connection falls under this record.
    fn matches(&self, connection: &ConnectionFacts<'_>) -> bool {
        self.tls.admits(connection.tls)
            && self.address.contains(connection.address)
            && self.databases.iter().any(|d| d.matches(connection))
            && self.users.iter().any(|u| u.matches(connection.user))
    }
}

/// What a connection type says about TLS: `host`, `hostssl`, `hostnossl`.
#[derive(Clone, Copy, Debug)]
enum TlsRequirement {
    Either,
    Required,
    Refused,
}

impl TlsRequirement {
    /// Whether a connection with (or without) TLS is of this type.
    fn admits(self, tls: bool) -> bool {
        match self {
            TlsRequirement::Either => true,
            TlsRequirement::Required => tls,
            TlsRequirement::Refused => !tls,
        }
    }
}

/// One entry of a database list.
#[derive(Debug)]
enum DatabasePattern {
    All,
    SameUser,
    Name(String),
}

impl DatabasePattern {
    /// Whether the connection's database is this entry (names compare exactly).
    fn matches(&self, connection: &ConnectionFacts<'_>) -> bool {
        match self {
            DatabasePattern::All => true,
            DatabasePattern::SameUser => connection.database == connection.user,
            DatabasePattern::Name(name) => name == connection.database,
        }
    }
}

/// One entry of a user list.
#[derive(Debug)]
enum UserPattern {
    All,
    Name(String),
}

impl UserPattern {
    /// Whether `user` is this entry (names compare exactly).
    fn matches(&self, user: &str) -> bool {
        match self {
            UserPattern::All => true,
            UserPattern::Name(name) => name == user,
        }
    }
}

/// The client addresses a record covers: an address whose bits under `mask` equal `network`.
#[derive(Debug)]
enum AddressRange {
    All,
    V4 { network: u32, mask: u32 },
    V6 { network: u128, mask: u128 },
}

impl AddressRange {
    /// The range of `address` under `mask`; None when they are of different families.
    fn masked(address: IpAddr, mask: IpAddr) -> Option<Self> {
        match (address, mask) {
            (IpAddr::V4(address), IpAddr::V4(mask)) => Some(AddressRange::V4 {
                network: u32::from(address) & u32::from(mask),
                mask: mask.into(),
            }),
            (IpAddr::V6(address), IpAddr::V6(mask)) => Some(AddressRange::V6 {
                network: u128::from(address) & u128::from(mask),
                mask: mask.into(),
            }),
            _ => None,
        }
    }

    /// Whether `address` is in the range; an IPv4-mapped IPv6 address is taken as IPv4, and a
    /// range of one family never holds an address of the other.
    fn contains(&self, address: IpAddr) -> bool {
        match (self, address.to_canonical()) {
            (AddressRange::All, _) => true,
            (AddressRange::V4 { network, mask }, IpAddr::V4(address)) => {
                u32::from(address) & mask == *network
            }
            (AddressRange::V6 { network, mask }, IpAddr::V6(address)) => {
                u128::from(address) & mask == *network
            }
            _ => false,
        }
    }
}

/// One word of a record, its quotes removed.
#[derive(Debug)]
struct Token {
    text: String,
    /// Whether the word began with a double quote, which makes a keyword a plain name.
    is_quoted: bool,
}

impl Token {
    /// Whether this is the unquoted keyword `keyword`.
    fn is_keyword(&self, keyword: &str) -> bool {
        !self.is_quoted && self.text == keyword
    }
}

/// A field of a record: its comma-separated tokens, never empty.
type Field = Vec<Token>;

/// The records of `text` with the line each starts on: lines ending in a backslash are joined to
/// the next one, the backslash and line break dropped.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut records = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (index, physical) in text.lines().enumerate() {
        let (number, mut record) = pending.take().unwrap_or((index + 1, String::new()));
        match physical.strip_suffix('\\') {
            Some(head) => {
                record.push_str(head);
                pending = Some((number, record));
            }
            None => {
                record.push_str(physical);
                records.push((number, record));
            }
        }
    }
    records.extend(pending);
    records
}

/// Splits a record into fields as PostgreSQL's `next_field_expand` does: tokens end at unquoted
/// blanks or commas, and a token ending in a comma continues its field past any blanks.
fn split_fields(record: &str) -> Result<Vec<Field>, String> {
    let mut chars = record.chars().peekable();
    let mut fields = Vec::new();
    while chars.peek().is_some() {
        let mut field = Vec::new();
        while let Some((token, ends_with_comma)) = next_token(&mut chars)? {
            if !token.is_quoted && token.text.len() > 1 && token.text.starts_with('@') {
                return Err(format!(
                    "file inclusion \"{}\" is not supported",
                    token.text
                ));
            }
            field.push(token);
            if !ends_with_comma {
                break;
            }
        }
        if !field.is_empty() {
            fields.push(field);
        }
    }
    Ok(fields)
}

/// Whether `c` separates fields, as PostgreSQL's `pg_isblank`.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r')
}

/// The next token and whether an unquoted comma ended it; None at the end of the record or at a
/// comment.
fn next_token(chars: &mut Peekable<Chars<'_>>) -> Result<Option<(Token, bool)>, String> {
    while chars.next_if(|&c| is_blank(c) || c == ',').is_some() {}
    let mut text = String::new();
    let (mut in_quote, mut was_quote, mut saw_quote, mut is_quoted) = (false, false, false, false);
    let mut ends_with_comma = false;
    while let Some(c) = chars.next_if(|&c| in_quote || !is_blank(c)) {
        if !in_quote && c == '#' {
            chars.by_ref().for_each(drop);
            break;
        }
        if !in_quote && c == ',' {
            ends_with_comma = true;
            break;
        }
        if c != '"' || was_quote {
            text.push(c);
        }
        was_quote = in_quote && c == '"' && !was_quote;
        if c == '"' {
            is_quoted |= text.is_empty();
            in_quote = !in_quote;
            saw_quote = true;
        }
    }
    if in_quote {
        return Err("unterminated quoted string".to_string());
    }
    Ok((saw_quote || !text.is_empty()).then_some((Token { text, is_quoted }, ends_with_comma)))
}

/// The next field, or PostgreSQL's complaint that the record ended before `what`.
fn next_field<'f>(
    fields: &mut impl Iterator<Item = &'f Field>,
    what: &str,
) -> Result<&'f Field, String> {
    fields
        .next()
        .ok_or_else(|| format!("end-of-line before {what}"))
}

/// The one token of a field that may not be a list of `what`.
fn single<'f>(field: &'f Field, what: &str) -> Result<&'f Token, String> {
    match field.as_slice() {
        [token] => Ok(token),
        _ => Err(format!("multiple values specified for {what}")),
    }
}

/// Reads one record; None for a valid record that can never match a Fluxion connection.
fn parse_rule(fields: &[Field]) -> Result<Option<Rule>, String> {
    let mut fields = fields.iter();
    let connection_type = single(
        next_field(&mut fields, "connection type")?,
        "connection type",
    )?;
    let (tls, has_address) = match connection_type.text.as_str() {
        "local" => (None, false),
        "host" => (Some(TlsRequirement::Either), true),
        "hostssl" => (Some(TlsRequirement::Required), true),
        "hostnossl" => (Some(TlsRequirement::Refused), true),
        "hostgssenc" | "hostnogssenc" => (None, true),
        other => return Err(format!("invalid connection type \"{other}\"")),
    };
    let databases = next_field(&mut fields, "database specification")?
        .iter()
        .filter_map(|token| parse_database(token).transpose())
        .collect::<Result<_, _>>()?;
    let users = next_field(&mut fields, "role specification")?
        .iter()
        .map(parse_user)
        .collect::<Result<_, _>>()?;
    let address = if has_address {
        parse_address(&mut fields)?
    } else {
        AddressRange::All
    };
    let method = single(
        next_field(&mut fields, "authentication method")?,
        "authentication type",
    )?;
    let mut options = fields.flatten();
    let Some(tls) = tls else {
        if !POSTGRES_ONLY_METHODS.contains(&method.text.as_str()) {
            method_named(&method.text)?;
        }
        for option in options {
            option_name(option)?;
        }
        return Ok(None);
    };
    let method = method_named(&method.text)?;
    if let Some(option) = options.next() {
        let name = option_name(option)?;
        return Err(format!("authentication option \"{name}\" is not supported"));
    }
    Ok(Some(Rule {
        tls,
        databases,
        users,
        address,
        method,
    }))
}

/// One entry of the database field; None for `replication`, which never matches since Fluxion
/// takes no replication connections.
fn parse_database(token: &Token) -> Result<Option<DatabasePattern>, String> {
    if token.is_keyword("all") {
        Ok(Some(DatabasePattern::All))
    } else if token.is_keyword("sameuser") {
        Ok(Some(DatabasePattern::SameUser))
    } else if token.is_keyword("samerole") || token.is_keyword("samegroup") {
        Err(format!(
            "database keyword \"{}\" is not supported",
            token.text
        ))
    } else if token.is_keyword("replication") {
        Ok(None)
    } else {
        Ok(Some(DatabasePattern::Name(token.text.clone())))
    }
}

/// One entry of the user field.
fn parse_user(token: &Token) -> Result<UserPattern, String> {
    if !token.is_quoted && token.text.starts_with('+') {
        Err(format!(
            "group membership \"{}\" is not supported",
            token.text
        ))
    } else if token.is_keyword("all") {
        Ok(UserPattern::All)
    } else {
        Ok(UserPattern::Name(token.text.clone()))
    }
}

/// The address field, and the netmask field after an address written without `/bits`.
fn parse_address<'f>(fields: &mut impl Iterator<Item = &'f Field>) -> Result<AddressRange, String> {
    let token = single(
        next_field(fields, "IP address specification")?,
        "host address",
    )?;
    if token.is_keyword("all") {
        return Ok(AddressRange::All);
    }
    if token.is_keyword("samehost") || token.is_keyword("samenet") {
        return Err(format!(
            "address keyword \"{}\" is not supported",
            token.text
        ));
    }
    let (address, mask) = match token.text.split_once('/') {
        Some((address, bits)) => {
            let address: IpAddr = address
                .parse()
                .map_err(|_| format!("invalid IP address \"{address}\""))?;
            let mask = cidr_mask(address, bits)
                .ok_or_else(|| format!("invalid CIDR mask in address \"{}\"", token.text))?;
            (address, mask)
        }
        None => {
            let address: IpAddr = token
                .text
                .parse()
                .map_err(|_| format!("host name \"{}\" is not supported", token.text))?;
            let mask = single(next_field(fields, "netmask specification")?, "netmask")?;
            let mask = mask
                .text
                .parse()
                .map_err(|_| format!("invalid IP mask \"{}\"", mask.text))?;
            (address, mask)
        }
    };
    AddressRange::masked(address, mask).ok_or_else(|| "IP address and mask do not match".into())
}

/// The netmask of `/bits` for an address of `address`'s family; None unless `bits` is a prefix
/// length that family has.
fn cidr_mask(address: IpAddr, bits: &str) -> Option<IpAddr> {
    let bits: u32 = bits.parse().ok()?;
    match address {
        IpAddr::V4(_) if bits <= 32 => {
            Some(Ipv4Addr::from(u32::MAX.checked_shl(32 - bits).unwrap_or(0)).into())
        }
        IpAddr::V6(_) if bits <= 128 => {
            Some(Ipv6Addr::from(u128::MAX.checked_shl(128 - bits).unwrap_or(0)).into())
        }
        _ => None,
    }
}

/// The method a record names (`md5` is SCRAM, as PostgreSQL treats it for SCRAM-stored passwords).
fn method_named(name: &str) -> Result<AuthMethod, String> {
    match name {
        "trust" => Ok(AuthMethod::Trust),
        "reject" => Ok(AuthMethod::Reject),
        "scram-sha-256" | "md5" => Ok(AuthMethod::ScramSha256),
        "password" => Ok(AuthMethod::Password),
        other if POSTGRES_ONLY_METHODS.contains(&other) => Err(format!(
            "invalid authentication method \"{other}\": not supported by Fluxion"
        )),
        other => Err(format!("invalid authentication method \"{other}\"")),
    }
}

/// The name of a `name=value` option.
fn option_name(option: &Token) -> Result<&str, String> {
    option
        .text
        .split_once('=')
        .map(|(name, _)| name)
        .ok_or_else(|| {
            format!(
                "authentication option not in name=value format: {}",
                option.text
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use AuthMethod::{Password, Reject, ScramSha256, Trust};

    const ORIGIN: &str = "/etc/fluxion/pg_hba.conf";

    fn parse_rules(text: &str) -> AccessRules {
        AccessRules::parse(text, ORIGIN).expect("test rules parse")
    }

    fn method(
        rules: &AccessRules,
        address: &str,
        user: &str,
        db: &str,
        tls: bool,
    ) -> Option<AuthMethod> {
        let address = address.parse().expect("test address parses");
        rules.method_for(&ConnectionFacts {
            address,
            user,
            database: db,
            tls,
        })
    }

    /// The method for user `alice` on database `shop` from `address`, without TLS.
    fn method_at(rules: &AccessRules, address: &str) -> Option<AuthMethod> {
        method(rules, address, "alice", "shop", false)
    }

    /// The method for `user` on `database` from 10.0.0.1, without TLS.
    fn method_as(rules: &AccessRules, user: &str, database: &str) -> Option<AuthMethod> {
        method(rules, "10.0.0.1", user, database, false)
    }

    /// The line and message of the error `text` fails with.
    fn line_error(text: &str) -> (usize, String) {
        match AccessRules::parse(text, ORIGIN) {
            Err(AccessRulesError::InvalidLine {
                origin,
                line,
                message,
            }) => {
                assert_eq!(origin, ORIGIN);
                (line, message)
            }
            other => panic!("expected an invalid line, got {other:?}"),
        }
    }

    #[test]
    fn first_matching_rule_wins() {
        let rules = parse_rules(
            "host shop alice 10.0.0.0/8 reject\n\
             host all all 10.0.0.0/8 trust\n\
             host all all all password\n",
        );
        assert_eq!(method_at(&rules, "10.1.2.3"), Some(Reject));
        assert_eq!(method_as(&rules, "bob", "shop"), Some(Trust));
        assert_eq!(method_at(&rules, "192.0.2.1"), Some(Password));
    }

    #[test]
    fn no_matching_rule_yields_none() {
        let rules = parse_rules("host shop alice 10.0.0.0/8 trust\n");
        assert_eq!(method_at(&rules, "11.0.0.1"), None);
        assert_eq!(method_as(&rules, "bob", "shop"), None);
        assert_eq!(method_as(&rules, "alice", "other"), None);
        let empty = parse_rules("# only a comment\n\n");
        assert_eq!(method_at(&empty, "10.0.0.1"), None);
    }

    #[test]
    fn connection_type_decides_by_tls() {
        let rules = parse_rules(
            "hostssl all tls_user all trust\n\
             hostnossl all plain_user all password\n\
             host all all all scram-sha-256\n",
        );
        let by_tls = |user, tls| method(&rules, "10.0.0.1", user, "d", tls);
        assert_eq!(by_tls("tls_user", true), Some(Trust));
        assert_eq!(by_tls("tls_user", false), Some(ScramSha256));
        assert_eq!(by_tls("plain_user", false), Some(Password));
        assert_eq!(by_tls("plain_user", true), Some(ScramSha256));
        assert_eq!(by_tls("x", true), Some(ScramSha256));
        assert_eq!(by_tls("x", false), Some(ScramSha256));
    }

    #[test]
    fn local_and_gss_encrypted_records_load_and_never_match() {
        let rules = parse_rules(
            "local all postgres peer\n\
             local all all ident map=omicron\n\
             hostgssenc all all 0.0.0.0/0 gss include_realm=0\n\
             hostnogssenc all all all trust\n\
             host all all 0.0.0.0/0 password\n",
        );
        assert_eq!(
            method(&rules, "10.0.0.1", "postgres", "d", false),
            Some(Password)
        );
        assert_eq!(
            method(&rules, "10.0.0.1", "postgres", "d", true),
            Some(Password)
        );
        assert_eq!(method_at(&rules, "::1"), None);
    }

    #[test]
    fn ipv4_rules_match_ipv4_mapped_clients_only() {
        let rules = parse_rules("host all all 192.168.1.0/24 trust\n");
        assert_eq!(method_at(&rules, "192.168.1.9"), Some(Trust));
        assert_eq!(method_at(&rules, "::ffff:192.168.1.9"), Some(Trust));
        assert_eq!(method_at(&rules, "::ffff:192.168.2.9"), None);
        assert_eq!(method_at(&rules, "::c0a8:109"), None);
        assert_eq!(method_at(&rules, "2001:db8::1"), None);
    }

    #[test]
    fn ipv6_rules_never_match_ipv4_clients() {
        let rules = parse_rules("host all all ::/0 trust\n");
        assert_eq!(method_at(&rules, "2001:db8::1"), Some(Trust));
        assert_eq!(method_at(&rules, "10.0.0.1"), None);
        assert_eq!(method_at(&rules, "::ffff:10.0.0.1"), None);
    }

    #[test]
    fn cidr_masks_cover_their_prefix() {
        let rules = parse_rules(
            "host all all 192.168.1.5/32 reject\n\
             host all all 10.1.2.3/8 trust\n\
             host all all 2001:db8::/32 password\n\
             host all all 0.0.0.0/0 scram-sha-256\n",
        );
        assert_eq!(method_at(&rules, "192.168.1.5"), Some(Reject));
        assert_eq!(method_at(&rules, "192.168.1.6"), Some(ScramSha256));
        assert_eq!(method_at(&rules, "10.255.0.1"), Some(Trust));
        assert_eq!(method_at(&rules, "11.0.0.1"), Some(ScramSha256));
        assert_eq!(method_at(&rules, "2001:db8:ffff::1"), Some(Password));
        assert_eq!(method_at(&rules, "2001:db9::1"), None);
    }

    #[test]
    fn netmask_fields_cover_their_network() {
        let rules = parse_rules(
            "host all all 127.0.0.1 255.255.255.255 trust\n\
             host all all 192.168.0.0\t255.255.0.0 password\n\
             host all all fe80:: ffff:ffff:ffff:ffff:: reject\n",
        );
        assert_eq!(method_at(&rules, "127.0.0.1"), Some(Trust));
        assert_eq!(method_at(&rules, "127.0.0.2"), None);
        assert_eq!(method_at(&rules, "192.168.44.1"), Some(Password));
        assert_eq!(method_at(&rules, "192.169.0.1"), None);
        assert_eq!(method_at(&rules, "fe80::1234"), Some(Reject));
        assert_eq!(method_at(&rules, "fe81::1"), None);
    }

    #[test]
    fn address_all_covers_both_families() {
        let rules = parse_rules("host all all all trust\n");
        assert_eq!(method_at(&rules, "198.51.100.4"), Some(Trust));
        assert_eq!(method_at(&rules, "2001:db8::4"), Some(Trust));
    }

    #[test]
    fn database_lists_keywords_and_exact_names() {
        let rules = parse_rules(
            "host shop,Stock all all trust\n\
             host sameuser all all password\n\
             host replication all all reject\n\
             host replication,other all all scram-sha-256\n",
        );
        assert_eq!(method_as(&rules, "u", "shop"), Some(Trust));
        assert_eq!(method_as(&rules, "u", "Stock"), Some(Trust));
        assert_eq!(method_as(&rules, "u", "stock"), None);
        assert_eq!(method_as(&rules, "bob", "bob"), Some(Password));
        assert_eq!(method_as(&rules, "u", "replication"), None);
        assert_eq!(method_as(&rules, "u", "other"), Some(ScramSha256));
    }

    #[test]
    fn a_list_continues_past_blanks_after_a_comma() {
        let rules = parse_rules("host shop,  stock alice,\tbob all trust\n");
        assert_eq!(method_as(&rules, "bob", "stock"), Some(Trust));
        assert_eq!(method_as(&rules, "carol", "stock"), None);
    }

    #[test]
    fn user_lists_and_exact_names() {
        let rules = parse_rules("host all alice,Bob all trust\n");
        assert_eq!(method_as(&rules, "alice", "d"), Some(Trust));
        assert_eq!(method_as(&rules, "Bob", "d"), Some(Trust));
        assert_eq!(method_as(&rules, "bob", "d"), None);
        assert_eq!(method_as(&rules, "Alice", "d"), None);
    }

    #[test]
    fn methods_map_to_what_fluxion_runs() {
        let rules = parse_rules(
            "host all a all trust\n\
             host all b all reject\n\
             host all c all scram-sha-256\n\
             host all d all md5\n\
             host all e all password\n",
        );
        assert_eq!(method_as(&rules, "a", "d"), Some(Trust));
        assert_eq!(method_as(&rules, "b", "d"), Some(Reject));
        assert_eq!(method_as(&rules, "c", "d"), Some(ScramSha256));
        assert_eq!(method_as(&rules, "d", "d"), Some(ScramSha256));
        assert_eq!(method_as(&rules, "e", "d"), Some(Password));
    }

    #[test]
    fn quoted_keywords_are_plain_names() {
        let rules = parse_rules(
            "host \"all\" \"sameuser\" all trust\n\
             host \"replication\" all all password\n\
             host all \"+staff\",\"@admins\" all reject\n",
        );
        assert_eq!(method_as(&rules, "sameuser", "all"), Some(Trust));
        assert_eq!(method_as(&rules, "sameuser", "shop"), None);
        assert_eq!(method_as(&rules, "x", "replication"), Some(Password));
        assert_eq!(method_as(&rules, "+staff", "shop"), Some(Reject));
        assert_eq!(method_as(&rules, "@admins", "shop"), Some(Reject));
    }

    #[test]
    fn quotes_hold_blanks_commas_hashes_and_doubled_quotes() {
        let rules = parse_rules(
            "host \"my shop\",\"a,b\" all all trust\n\
             host \"x#y\" \"say \"\"hi\"\"\" all password # a comment\n",
        );
        assert_eq!(method_as(&rules, "u", "my shop"), Some(Trust));
        assert_eq!(method_as(&rules, "u", "a,b"), Some(Trust));
        assert_eq!(method_as(&rules, "u", "a"), None);
        assert_eq!(method_as(&rules, "say \"hi\"", "x#y"), Some(Password));
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let rules = parse_rules(
            "# TYPE DATABASE USER ADDRESS METHOD\n\
             \n   \t\n\
             host all all 10.0.0.0/8 trust# glued comment\n\
             host all all all reject #host all all all trust\n",
        );
        assert_eq!(method_at(&rules, "10.0.0.1"), Some(Trust));
        assert_eq!(method_at(&rules, "11.0.0.1"), Some(Reject));
    }

    #[test]
    fn crlf_line_ends_are_accepted() {
        let rules = parse_rules("host all all 10.0.0.0/8 trust\r\nhost all all all reject\r\n");
        assert_eq!(method_at(&rules, "10.0.0.1"), Some(Trust));
        assert_eq!(method_at(&rules, "11.0.0.1"), Some(Reject));
    }

    #[test]
    fn backslash_continues_a_record_on_the_next_line() {
        let rules = parse_rules(
            "host shop \\\n  alice \\\n  10.0.0.0/8 scram-\\\nsha-256\n\
             host all all all trust\n",
        );
        assert_eq!(method_at(&rules, "10.0.0.1"), Some(ScramSha256));
        assert_eq!(method_at(&rules, "11.0.0.1"), Some(Trust));
    }

    #[test]
    fn backslash_continues_a_comment_too() {
        let rules = parse_rules("# comment \\\nhost all all all reject\nhost all all all trust\n");
        assert_eq!(method_at(&rules, "10.0.0.1"), Some(Trust));
    }

    #[test]
    fn errors_name_the_line_a_continued_record_starts_on() {
        let text = "host all all all trust\n\nhost all \\\n all \\\n all crypt\n";
        let crypt = "invalid authentication method \"crypt\"";
        assert_eq!(line_error(text), (3, crypt.into()));
        let unfinished = "host all all all trust\nhost all all all \\\n";
        let no_method = "end-of-line before authentication method";
        assert_eq!(line_error(unfinished), (2, no_method.into()));
    }

    #[test]
    fn error_display_names_the_origin_and_line() {
        let error = AccessRules::parse("\nhost all all all ldap\n", ORIGIN).unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid authentication method \"ldap\": not supported by Fluxion \
             (line 2 of access rule file \"/etc/fluxion/pg_hba.conf\")"
        );
    }

    /// Records Fluxion refuses, each with the message it refuses it with, split at ` | `.
    const INVALID_RECORDS: &str = r#"
hostx all all all trust                        | invalid connection type "hostx"
host,hostssl all all all trust                 | multiple values specified for connection type
host                                           | end-of-line before database specification
host all # no user                             | end-of-line before role specification
host all all                                   | end-of-line before IP address specification
host all all 10.0.0.0/8                        | end-of-line before authentication method
local all all                                  | end-of-line before authentication method
host all all 10.0.0.1                          | end-of-line before netmask specification
host all all 127.0.0.1 trust                   | invalid IP mask "trust"
host all all 10.0.0.0/33 trust                 | invalid CIDR mask in address "10.0.0.0/33"
host all all ::1/129 trust                     | invalid CIDR mask in address "::1/129"
host all all 10.0.0.0/ trust                   | invalid CIDR mask in address "10.0.0.0/"
host all all 10.0.0.0/-1 trust                 | invalid CIDR mask in address "10.0.0.0/-1"
host all all 10.0.0/8 trust                    | invalid IP address "10.0.0"
host all all 10.0.0.0 ffff:: trust             | IP address and mask do not match
host all all 10.0.0.0/8,::1/128 trust          | multiple values specified for host address
host all all 10.0.0.0 255.0.0.0,0.0.0.0 trust  | multiple values specified for netmask
host all all samehost trust                    | address keyword "samehost" is not supported
host all all samenet trust                     | address keyword "samenet" is not supported
host all all db.example.com trust              | host name "db.example.com" is not supported
host all all "all" trust                       | host name "all" is not supported
host shop,samerole all all trust               | database keyword "samerole" is not supported
host samegroup all all trust                   | database keyword "samegroup" is not supported
host @dbs.txt all all trust                    | file inclusion "@dbs.txt" is not supported
host all alice,+staff all trust                | group membership "+staff" is not supported
host all @users all trust                      | file inclusion "@users" is not supported
host all all all trust,reject                  | multiple values specified for authentication type
host all all all crypt                         | invalid authentication method "crypt"
host all all all Trust                         | invalid authentication method "Trust"
local all all sameuser                         | invalid authentication method "sameuser"
host all all all peer                          | invalid authentication method "peer": not supported by Fluxion
host all all all ident                         | invalid authentication method "ident": not supported by Fluxion
hostssl all all all gss                        | invalid authentication method "gss": not supported by Fluxion
hostnossl all all all sspi                     | invalid authentication method "sspi": not supported by Fluxion
host all all all pam                           | invalid authentication method "pam": not supported by Fluxion
host all all all ldap                          | invalid authentication method "ldap": not supported by Fluxion
host all all all radius                        | invalid authentication method "radius": not supported by Fluxion
hostssl all all all cert                       | invalid authentication method "cert": not supported by Fluxion
host all all all bsd                           | invalid authentication method "bsd": not supported by Fluxion
hostssl all all all md5 clientcert=verify-ca   | authentication option "clientcert" is not supported
host all all all trust verbose                 | authentication option not in name=value format: verbose
local all all peer map                         | authentication option not in name=value format: map
host "shop all all trust                       | unterminated quoted string
"#;

    #[test]
    fn invalid_records_are_refused_with_their_line() {
        let cases = INVALID_RECORDS.lines().filter(|line| !line.is_empty());
        for (record, message) in cases.map(|case| case.split_once(" | ").expect("a test case")) {
            let text =
                format!("host all all 10.0.0.0/8 trust\n\n{record}\nhost all all all trust\n");
            assert_eq!(line_error(&text), (3, message.to_string()), "{record}");
        }
    }

    #[test]
    fn default_rules_trust_loopback_and_ask_scram_elsewhere() {
        let rules = AccessRules::default_rules();
        for tls in [false, true] {
            for loopback in ["127.0.0.1", "127.5.5.5", "::1", "::ffff:127.0.0.1"] {
                assert_eq!(
                    method(&rules, loopback, "u", "d", tls),
                    Some(Trust),
                    "{loopback}"
                );
            }
            for remote in ["192.0.2.7", "2001:db8::1", "::ffff:192.0.2.7", "128.0.0.1"] {
                assert_eq!(
                    method(&rules, remote, "u", "d", tls),
                    Some(ScramSha256),
                    "{remote}"
                );
            }
        }
    }

    #[test]
    fn load_reads_a_file_and_names_it_in_errors() {
        let directory = std::env::temp_dir().join(format!("fluxion-hba-{}", std::process::id()));
        std::fs::create_dir_all(&directory).expect("temp dir");
        let good = directory.join("good_hba.conf");
        std::fs::write(&good, "host all all 10.0.0.0/8 reject\n").expect("write rules");
        let loaded = AccessRules::load(&good).expect("rules load");
        assert_eq!(method_at(&loaded, "10.0.0.1"), Some(Reject));
        assert_eq!(method_at(&loaded, "11.0.0.1"), None);

        let bad = directory.join("bad_hba.conf");
        std::fs::write(&bad, "# header\nhost all all all ident\n").expect("write rules");
        match AccessRules::load(&bad) {
            Err(AccessRulesError::InvalidLine { origin, line, .. }) => {
                assert_eq!(origin, bad.display().to_string());
                assert_eq!(line, 2);
            }
            other => panic!("expected an invalid line, got {other:?}"),
        }

        let missing = directory.join("missing_hba.conf");
        match AccessRules::load(&missing) {
            Err(AccessRulesError::Io { path, source }) => {
                assert_eq!(path, missing);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected an I/O error, got {other:?}"),
        }
        std::fs::remove_dir_all(&directory).expect("remove temp dir");
    }
}
