// Package dsn recognises the forms SQL_DSN may take and says which engine
// each one names. It is a pure function of the string, so configuration can
// reject a bad DSN at start (with every other invalid value) and the store
// opens exactly what was recognised.
package dsn

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// Engine names the SQL engine a DSN selects. The values are the store's
// dialect names.
type Engine string

// The engines.
const (
	SQLite   Engine = "sqlite"
	Postgres Engine = "postgres"
	MySQL    Engine = "mysql"
)

// Forms lists the accepted forms, for messages and docs.
const Forms = "empty for SQLite; " +
	"postgres://user:password@host:5432/db?sslmode=disable (PostgreSQL URL); " +
	"host=… port=5432 user=… password=… dbname=… (PostgreSQL keyword/value, values quoted as '…' per libpq); " +
	"user:password@tcp(host:3306)/db (MySQL/MariaDB driver form); " +
	"mysql://user:password@host:3306/db (MySQL/MariaDB URL)"

// ErrUnrecognised is returned for a string that is none of the forms.
var ErrUnrecognised = errors.New("not a recognised DSN; accepted forms: " + Forms)

// Parse recognises s and returns its engine and the string to hand to that
// engine's driver: PostgreSQL forms unchanged (pgx parses both), a mysql://
// URL rewritten to the driver form. No error carries the password.
func Parse(s string) (Engine, string, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return SQLite, "", nil
	case hasScheme(s, "postgres://", "postgresql://"):
		if _, err := url.Parse(s); err != nil {
			// url.Parse's error quotes the whole URL, password included.
			return "", "", errors.New("PostgreSQL URL: not a valid URL (reserved characters in the user or password must be percent-encoded)")
		}
		return Postgres, s, nil
	case hasScheme(s, "mysql://"):
		d, err := mysqlURL(s)
		if err != nil {
			return "", "", err
		}
		return MySQL, d, nil
	}
	if pairs, err := keywordValues(s); err == nil && hasConnectionKeyword(pairs) {
		return Postgres, s, nil
	} else if err != nil && looksKeywordValue(s) {
		return "", "", fmt.Errorf("PostgreSQL keyword/value form: %v", err)
	}
	if mysqlDriverForm.MatchString(s) {
		cfg, err := mysql.ParseDSN(s)
		if err != nil {
			return "", "", mysqlError("MySQL/MariaDB DSN", s)
		}
		if !mysqlNets[cfg.Net] {
			return "", "", ErrUnrecognised
		}
		return MySQL, s, nil
	}
	return "", "", ErrUnrecognised
}

// hasScheme is case-sensitive like pgx, which reads any other spelling as
// keyword/value settings.
func hasScheme(s string, schemes ...string) bool {
	for _, scheme := range schemes {
		if strings.HasPrefix(s, scheme) {
			return true
		}
	}
	return false
}

// mysqlDriverForm matches go-sql-driver's [user[:password]@][net[(addr)]]/db
// far enough to tell it apart from junk: right after the userinfo's @ (or at
// the start) comes a network address such as tcp(host:port) or the slash
// before the database name. "user@localhost/db" (no tcp(…)) is not matched:
// the driver would take localhost for a network name.
var mysqlDriverForm = regexp.MustCompile(`(?s)^(?:.*@)?(?:(?:tcp[46]?|unix)\(|/)`)

var leadingKeyword = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_]*)\s*=`)

// mysqlNets are the networks the driver dials without registration.
var mysqlNets = map[string]bool{"tcp": true, "tcp4": true, "tcp6": true, "unix": true}

// mysqlURL turns mysql://user:password@host:port/db?params into the
// driver's user:password@tcp(host:port)/db?params.
func mysqlURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "", errors.New("MySQL URL: not a valid mysql://user:password@host:3306/db URL (reserved characters in the user or password must be percent-encoded)")
	}
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = u.Host
	if u.User != nil {
		cfg.User = u.User.Username()
		cfg.Passwd, _ = u.User.Password()
	}
	cfg.DBName = strings.TrimPrefix(u.Path, "/")
	if cfg.DBName == "" || strings.Contains(cfg.DBName, "/") {
		return "", errors.New("MySQL URL: the path must name one database (mysql://user:password@host:3306/db)")
	}
	d := cfg.FormatDSN()
	if q := u.Query(); len(q) > 0 {
		sep := "?"
		if strings.Contains(d, "?") {
			sep = "&"
		}
		// Encode escapes every / in values: the driver splits at the
		// last slash.
		d += sep + q.Encode()
	}
	if _, err := mysql.ParseDSN(d); err != nil {
		return "", mysqlError("MySQL URL", d)
	}
	return d, nil
}

// mysqlError explains why the driver refused d without repeating d: the
// driver's messages quote pieces of the string, which, when the userinfo is
// misread, are pieces of the password. The parameters are parsed again on
// their own, so a bad parameter is named with the driver's message.
func mysqlError(form, d string) error {
	params := ""
	if i := strings.LastIndexByte(d, '/'); i >= 0 {
		if _, q, ok := strings.Cut(d[i:], "?"); ok {
			params = q
		}
	}
	if params != "" {
		if _, err := mysql.ParseDSN("/?" + params); err != nil {
			return fmt.Errorf("%s: %v", form, err)
		}
	}
	return errors.New(form + ": the driver cannot read it; write user:password@tcp(host:3306)/db?param=value, " +
		"or put a password with / ( ) or ? in a mysql:// URL, percent-encoded")
}

// connectionKeywords are libpq keywords that only a connection string has;
// at least one must appear, so a stray "a=b" is not taken for PostgreSQL.
var connectionKeywords = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true,
	"password": true, "service": true, "sslmode": true,
}

func hasConnectionKeyword(pairs map[string]string) bool {
	for k := range pairs {
		if connectionKeywords[k] {
			return true
		}
	}
	return false
}

// looksKeywordValue is true when s starts like keyword/value settings
// (host=…), so a syntax error there is reported as such rather than as an
// unrecognised DSN.
func looksKeywordValue(s string) bool {
	m := leadingKeyword.FindStringSubmatch(s)
	return m != nil && connectionKeywords[m[1]]
}

// keywordValues parses libpq keyword/value settings: keyword = value pairs
// separated by whitespace, where a value is either unquoted (no spaces) or
// single-quoted, and a backslash escapes the next character in both.
func keywordValues(s string) (map[string]string, error) {
	pairs := map[string]string{}
	i := 0
	skipSpace := func() {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	for skipSpace(); i < len(s); skipSpace() {
		start := i
		for i < len(s) && isKeywordChar(s[i]) {
			i++
		}
		key := s[start:i]
		if key == "" || key[0] >= '0' && key[0] <= '9' {
			return nil, errors.New("expected keyword=value")
		}
		skipSpace()
		if i >= len(s) || s[i] != '=' {
			// Not echoed: a bare word may be a password missing its "password=".
			return nil, errors.New("a word without =; write keyword=value, and quote values with spaces as '…'")
		}
		i++
		skipSpace()
		var v strings.Builder
		if i < len(s) && s[i] == '\'' {
			i++
			closed := false
			for i < len(s) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					v.WriteByte(s[i])
					i++
					continue
				}
				if c == '\'' {
					closed = true
					break
				}
				v.WriteByte(c)
			}
			if !closed {
				return nil, fmt.Errorf("%s: unterminated quoted value", key)
			}
			if i < len(s) && !isSpace(s[i]) {
				return nil, fmt.Errorf("%s: a space must follow the quoted value", key)
			}
		} else {
			for i < len(s) && !isSpace(s[i]) {
				c := s[i]
				i++
				if c == '\\' && i < len(s) {
					c = s[i]
					i++
				}
				v.WriteByte(c)
			}
		}
		pairs[key] = v.String() // libpq: the last of repeated keywords wins
	}
	if len(pairs) == 0 {
		return nil, errors.New("no settings")
	}
	return pairs, nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isKeywordChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
