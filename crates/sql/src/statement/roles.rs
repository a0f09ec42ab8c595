//! `CREATE ROLE | USER`, `ALTER ROLE | USER` and `DROP ROLE | USER`, typed: names folded,
//! options checked as PostgreSQL checks them (each at most once, a connection limit of −1 or
//! more, `VALID UNTIL` a timestamp). Passwords stay as written; the coordinator turns them
//! into verifiers.

use datafusion::arrow::compute::kernels::cast_utils::string_to_timestamp_nanos;
use datafusion::sql::sqlparser::ast::{
    self, AlterRoleOperation, Expr, ObjectName, Password, RoleOption, UnaryOperator, Value,
};
use datafusion::sql::sqlparser::keywords::Keyword;
use datafusion::sql::sqlparser::parser::Parser;
use datafusion::sql::sqlparser::tokenizer::{Token, TokenWithSpan, Whitespace};

use crate::names::fold_ident;
use crate::statement::Statement;
use crate::SqlError;

/// `CREATE ROLE name [WITH] option …` (`CREATE USER` adds `LOGIN`).
#[derive(Debug, Clone, PartialEq)]
pub struct CreateRole {
    /// The role's name.
    pub name: String,
    /// Its attributes, as written.
    pub options: RoleOptions,
    /// `IN ROLE r, …` (or `IN GROUP`): the roles it becomes a member of.
    pub in_roles: Vec<String>,
    /// `ROLE m, …` (or `USER`): the roles that become its members.
    pub members: Vec<String>,
    /// `ADMIN m, …`: the roles that become its members WITH ADMIN OPTION.
    pub admins: Vec<String>,
}

/// `ALTER ROLE name …`.
#[derive(Debug, Clone, PartialEq)]
pub enum AlterRole {
    /// `ALTER ROLE name [WITH] option …`.
    Options {
        /// The role.
        name: String,
        /// The attributes to change.
        options: RoleOptions,
    },
    /// `ALTER ROLE name RENAME TO new_name`.
    Rename {
        /// The role.
        name: String,
        /// Its new name.
        new_name: String,
    },
}

/// `DROP ROLE [IF EXISTS] name, …`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropRole {
    /// The roles, in the order written.
    pub names: Vec<String>,
    /// `IF EXISTS`: a missing role is a notice, not an error.
    pub if_exists: bool,
}

/// A role's attributes as a statement sets them; `None` leaves one as it is (or, creating,
/// at PostgreSQL's default).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoleOptions {
    /// `SUPERUSER` / `NOSUPERUSER`.
    pub superuser: Option<bool>,
    /// `CREATEDB` / `NOCREATEDB`.
    pub create_db: Option<bool>,
    /// `CREATEROLE` / `NOCREATEROLE`.
    pub create_role: Option<bool>,
    /// `INHERIT` / `NOINHERIT`.
    pub inherit: Option<bool>,
    /// `LOGIN` / `NOLOGIN`.
    pub login: Option<bool>,
    /// `REPLICATION` / `NOREPLICATION`.
    pub replication: Option<bool>,
    /// `BYPASSRLS` / `NOBYPASSRLS`.
    pub bypass_rls: Option<bool>,
    /// `CONNECTION LIMIT n` (−1: none).
    pub connection_limit: Option<i32>,
    /// `PASSWORD 'text'` (`Some(Some(_))`) or `PASSWORD NULL` (`Some(None)`).
    pub password: Option<Option<String>>,
    /// `VALID UNTIL 'timestamp'`: microseconds since the Unix epoch, `None` for `infinity`.
    pub valid_until: Option<Option<i64>>,
}

impl CreateRole {
    /// Types sqlparser's `CREATE ROLE`; `user` for `CREATE USER`, whose roles may log in
    /// unless `NOLOGIN` says otherwise.
    pub(crate) fn from_sql(create: ast::CreateRole, user: bool) -> Result<Self, SqlError> {
        if create.if_not_exists || create.authorization_owner.is_some() {
            return Err(SqlError::Syntax(
                "syntax error: CREATE ROLE takes neither IF NOT EXISTS nor AUTHORIZATION".into(),
            ));
        }
        let [name] = create.names.as_slice() else {
            return Err(SqlError::Syntax(
                "syntax error: CREATE ROLE creates one role".into(),
            ));
        };
        let name = role_name(name)?;
        let options = RoleOptions {
            superuser: create.superuser,
            create_db: create.create_db,
            create_role: create.create_role,
            inherit: create.inherit,
            login: create.login.or(user.then_some(true)),
            replication: create.replication,
            bypass_rls: create.bypassrls,
            connection_limit: create
                .connection_limit
                .as_ref()
                .map(connection_limit)
                .transpose()?,
            password: create.password.as_ref().map(password).transpose()?,
            valid_until: create.valid_until.as_ref().map(valid_until).transpose()?,
        };
        let names = |idents: &[ast::Ident]| idents.iter().map(fold_ident).collect::<Vec<_>>();
        Ok(CreateRole {
            name,
            options,
            in_roles: [names(&create.in_role), names(&create.in_group)].concat(),
            members: [names(&create.role), names(&create.user)].concat(),
            admins: names(&create.admin),
        })
    }
}

impl AlterRole {
    /// Types sqlparser's `ALTER ROLE`.
    pub(crate) fn from_sql(
        name: &ast::Ident,
        operation: AlterRoleOperation,
    ) -> Result<Self, SqlError> {
        let name = fold_ident(name);
        match operation {
            AlterRoleOperation::RenameRole { role_name } => Ok(AlterRole::Rename {
                name,
                new_name: fold_ident(&role_name),
            }),
            AlterRoleOperation::WithOptions { options } => Ok(AlterRole::Options {
                name,
                options: RoleOptions::from_sql(options)?,
            }),
            AlterRoleOperation::Set { .. } | AlterRoleOperation::Reset { .. } => {
                Err(SqlError::Unsupported(
                    "settings of a role (ALTER ROLE … SET) are not supported".into(),
                ))
            }
            AlterRoleOperation::AddMember { .. } | AlterRoleOperation::DropMember { .. } => Err(
                SqlError::Syntax("syntax error at or near \"MEMBER\"".into()),
            ),
        }
    }
}

impl RoleOptions {
    /// Types the options of `ALTER ROLE`: each may appear once (42601 otherwise, as in
    /// PostgreSQL).
    fn from_sql(options: Vec<RoleOption>) -> Result<Self, SqlError> {
        let mut out = RoleOptions::default();
        for option in options {
            let repeated = match option {
                RoleOption::SuperUser(on) => out.superuser.replace(on).is_some(),
                RoleOption::CreateDB(on) => out.create_db.replace(on).is_some(),
                RoleOption::CreateRole(on) => out.create_role.replace(on).is_some(),
                RoleOption::Inherit(on) => out.inherit.replace(on).is_some(),
                RoleOption::Login(on) => out.login.replace(on).is_some(),
                RoleOption::Replication(on) => out.replication.replace(on).is_some(),
                RoleOption::BypassRLS(on) => out.bypass_rls.replace(on).is_some(),
                RoleOption::ConnectionLimit(limit) => out
                    .connection_limit
                    .replace(connection_limit(&limit)?)
                    .is_some(),
                RoleOption::Password(given) => out.password.replace(password(&given)?).is_some(),
                RoleOption::ValidUntil(time) => {
                    out.valid_until.replace(valid_until(&time)?).is_some()
                }
            };
            if repeated {
                return Err(SqlError::Syntax("conflicting or redundant options".into()));
            }
        }
        Ok(out)
    }
}

/// `DROP ROLE` / `DROP USER` of sqlparser's `DROP`.
pub(crate) fn drop_role(names: &[ObjectName], if_exists: bool) -> Result<DropRole, SqlError> {
    Ok(DropRole {
        names: names.iter().map(role_name).collect::<Result<_, _>>()?,
        if_exists,
    })
}

/// `CREATE USER …` and `ALTER USER …`, which sqlparser's PostgreSQL dialect reads as other
/// databases' statements: read here as `CREATE ROLE … LOGIN` and `ALTER ROLE`. `None`, with
/// nothing consumed, for any other statement.
pub(crate) fn parse_user_statement(parser: &mut Parser) -> Result<Option<Statement>, SqlError> {
    if parser.parse_keywords(&[Keyword::CREATE, Keyword::USER]) {
        let create = parser.parse_create_role()?;
        return Ok(Some(
            CreateRole::from_sql(create, true)
                .map_or_else(Statement::Rejected, Statement::CreateRole),
        ));
    }
    if parser.parse_keywords(&[Keyword::ALTER, Keyword::USER]) {
        let altered = match parser.parse_alter_role()? {
            ast::Statement::AlterRole { name, operation } => AlterRole::from_sql(&name, operation),
            other => Err(SqlError::Unsupported(format!("statement {other}"))),
        };
        return Ok(Some(
            altered.map_or_else(Statement::Rejected, Statement::AlterRole),
        ));
    }
    Ok(None)
}

/// `tokens` with the minus of every `CONNECTION LIMIT -n` joined to its number, which
/// sqlparser reads only unsigned.
pub(crate) fn sign_connection_limits(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let is_word = |token: &Token, keyword: Keyword| matches!(token, Token::Word(word) if word.keyword == keyword);
    let words: Vec<usize> = (0..tokens.len())
        .filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_)))
        .collect();
    for window in words.windows(4) {
        let [connection, limit, minus, number] = *window else {
            continue;
        };
        let signed = is_word(&tokens[connection].token, Keyword::CONNECTION)
            && is_word(&tokens[limit].token, Keyword::LIMIT)
            && tokens[minus].token == Token::Minus;
        if let (true, Token::Number(digits, long)) = (signed, &tokens[number].token) {
            let joined = Token::Number(format!("-{digits}"), *long);
            tokens[number].token = joined;
            tokens[minus].token = Token::Whitespace(Whitespace::Space);
        }
    }
    tokens
}

/// A role's name: one identifier, folded.
fn role_name(name: &ObjectName) -> Result<String, SqlError> {
    match name.0.as_slice() {
        [part] => part
            .as_ident()
            .map(fold_ident)
            .ok_or_else(|| SqlError::Syntax(format!("invalid role name \"{name}\""))),
        _ => Err(SqlError::Syntax(format!(
            "syntax error: a role name is one identifier, not \"{name}\""
        ))),
    }
}

/// `CONNECTION LIMIT n`: an integer of −1 or more.
fn connection_limit(limit: &Expr) -> Result<i32, SqlError> {
    let (negative, digits) = match limit {
        Expr::UnaryOp {
            op: UnaryOperator::Minus,
            expr,
        } => (true, expr.as_ref()),
        other => (false, other),
    };
    let Expr::Value(value) = digits else {
        return Err(SqlError::Syntax(format!(
            "syntax error: CONNECTION LIMIT takes an integer, not {limit}"
        )));
    };
    let Value::Number(text, _) = &value.value else {
        return Err(SqlError::Syntax(format!(
            "syntax error: CONNECTION LIMIT takes an integer, not {limit}"
        )));
    };
    let magnitude: i32 = text
        .parse()
        .map_err(|_| SqlError::InvalidStatement(format!("invalid connection limit: {limit}")))?;
    let value = if negative { -magnitude } else { magnitude };
    if value < -1 {
        return Err(SqlError::InvalidParameterValue(format!(
            "invalid connection limit: {value}"
        )));
    }
    Ok(value)
}

/// `PASSWORD 'text'` or `PASSWORD NULL`.
fn password(password: &Password) -> Result<Option<String>, SqlError> {
    match password {
        Password::NullPassword => Ok(None),
        Password::Password(expr) => string_literal(expr, "PASSWORD").map(Some),
    }
}

/// `VALID UNTIL 'timestamp'`: microseconds since the Unix epoch; `None` for `infinity`,
/// `i64::MIN` for `-infinity` (never valid).
fn valid_until(time: &Expr) -> Result<Option<i64>, SqlError> {
    let text = string_literal(time, "VALID UNTIL")?;
    match text.trim().to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(None),
        "-infinity" => return Ok(Some(i64::MIN)),
        _ => {}
    }
    string_to_timestamp_nanos(text.trim())
        .map(|nanos| Some(nanos.div_euclid(1_000)))
        .map_err(|_| {
            SqlError::InvalidDateTime(format!(
                "invalid input syntax for type timestamp with time zone: \"{text}\""
            ))
        })
}

/// The text of a string literal.
fn string_literal(expr: &Expr, clause: &str) -> Result<String, SqlError> {
    match expr {
        Expr::Value(value) => match &value.value {
            Value::SingleQuotedString(text) | Value::EscapedStringLiteral(text) => Ok(text.clone()),
            _ => Err(SqlError::Syntax(format!(
                "syntax error: {clause} takes a string, not {expr}"
            ))),
        },
        _ => Err(SqlError::Syntax(format!(
            "syntax error: {clause} takes a string, not {expr}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use crate::statement::Statement;

    fn parse_one(sql: &str) -> Statement {
        let mut statements = crate::parse(sql).unwrap();
        assert_eq!(statements.len(), 1, "{sql}");
        statements.remove(0)
    }

    #[test]
    fn create_user_logs_in_and_create_role_does_not() {
        let Statement::CreateRole(user) =
            parse_one("CREATE USER Alice WITH PASSWORD 'pw' CONNECTION LIMIT 3")
        else {
            panic!("not CREATE ROLE")
        };
        assert_eq!(user.name, "alice");
        assert_eq!(user.options.login, Some(true));
        assert_eq!(user.options.password, Some(Some("pw".into())));
        assert_eq!(user.options.connection_limit, Some(3));
        let Statement::CreateRole(role) = parse_one("CREATE ROLE \"Bob\" NOLOGIN PASSWORD NULL")
        else {
            panic!("not CREATE ROLE")
        };
        assert_eq!(role.name, "Bob");
        assert_eq!(role.options.login, Some(false));
        assert_eq!(role.options.password, Some(None));
        let Statement::CreateRole(plain) = parse_one("CREATE ROLE carol") else {
            panic!("not CREATE ROLE")
        };
        assert_eq!(plain.options.login, None);
    }

    #[test]
    fn alter_and_drop_are_typed() {
        let Statement::AlterRole(super::AlterRole::Options { name, options }) = parse_one(
            "ALTER USER alice WITH SUPERUSER CONNECTION LIMIT -1 VALID UNTIL '2030-01-01 00:00:00+00'",
        ) else {
            panic!("not ALTER ROLE")
        };
        assert_eq!(name, "alice");
        assert_eq!(options.superuser, Some(true));
        assert_eq!(options.connection_limit, Some(-1));
        assert_eq!(options.valid_until, Some(Some(1_893_456_000_000_000)));
        assert!(matches!(
            parse_one("ALTER ROLE alice RENAME TO alicia"),
            Statement::AlterRole(super::AlterRole::Rename { .. })
        ));
        let Statement::DropRole(drop) = parse_one("DROP USER IF EXISTS a, \"B\"") else {
            panic!("not DROP ROLE")
        };
        assert_eq!(drop.names, ["a", "B"]);
        assert!(drop.if_exists);
    }

    #[test]
    fn bad_options_are_refused_as_postgres_refuses_them() {
        let refused = |sql: &str| match parse_one(sql) {
            Statement::Rejected(error) => error.to_string(),
            other => panic!("{sql} gave {other:?}"),
        };
        assert_eq!(
            refused("ALTER ROLE a CONNECTION LIMIT -5"),
            "invalid connection limit: -5"
        );
        assert_eq!(
            refused("ALTER ROLE a LOGIN NOLOGIN"),
            "conflicting or redundant options"
        );
        assert_eq!(
            refused("ALTER ROLE a VALID UNTIL 'garbage'"),
            "invalid input syntax for type timestamp with time zone: \"garbage\""
        );
        let Statement::CreateRole(create) =
            parse_one("CREATE ROLE a IN ROLE b, \"C\" ROLE d USER e ADMIN f")
        else {
            panic!("not a CREATE ROLE");
        };
        assert_eq!(create.in_roles, ["b", "C"]);
        assert_eq!(create.members, ["d", "e"]);
        assert_eq!(create.admins, ["f"]);
    }
}
