package dsn

import (
	"errors"
	"strings"
	"testing"
)

func TestParseRecognisesEachForm(t *testing.T) {
	tests := []struct {
		in     string
		engine Engine
		driver string // "" means in unchanged (after trimming)
	}{
		{"", SQLite, ""},
		{"   ", SQLite, ""},
		{"postgres://postgres@127.0.0.1:5432/test?sslmode=disable", Postgres, ""},
		{"postgresql://u:p%40ss@db/test", Postgres, ""},
		{"postgres:///test?host=/var/run/postgresql", Postgres, ""},
		{"host=127.0.0.1 port=5432 user=postgres dbname=test sslmode=disable", Postgres, ""},
		{"  host=db dbname=test  ", Postgres, "host=db dbname=test"},
		{"host = db  user=mg password='it\\'s' dbname=test", Postgres, ""},
		{"host=/var/run/postgresql dbname=test", Postgres, ""},
		{`user=mg password='a b\'c\\d' dbname=test search_path=mg`, Postgres, ""},
		{"dbname=test", Postgres, ""},
		{"user=mg password= dbname=test", Postgres, ""}, // an empty unquoted value is libpq's '' too
		{"root@tcp(127.0.0.1:3306)/test", MySQL, ""},
		{"user:pass@tcp(db:3306)/modelgate?parseTime=true&loc=UTC", MySQL, ""},
		{"user:p@ss/w:rd@tcp(db)/modelgate", MySQL, ""},
		{"user:pass@unix(/run/mysqld/mysqld.sock)/modelgate", MySQL, ""},
		{"user:pass@tcp6([::1]:3306)/modelgate", MySQL, ""},
		{"user:pass@/modelgate", MySQL, ""},
		{"/modelgate", MySQL, ""},
		{"mysql://user:pass@db:3306/modelgate", MySQL, "user:pass@tcp(db:3306)/modelgate"},
		{"mysql://user:p%40ss%2Fx@db/modelgate?tls=skip-verify", MySQL, "user:p@ss/x@tcp(db)/modelgate?tls=skip-verify"},
		{"mysql://u@db/mg?loc=Asia/Shanghai&parseTime=true", MySQL, "u@tcp(db)/mg?loc=Asia%2FShanghai&parseTime=true"},
		{"mysql://root@[::1]:3307/mg", MySQL, "root@tcp([::1]:3307)/mg"},
	}
	for _, tt := range tests {
		engine, driver, err := Parse(tt.in)
		want := tt.driver
		if want == "" {
			want = strings.TrimSpace(tt.in)
		}
		if err != nil || engine != tt.engine || driver != want {
			t.Errorf("Parse(%q) = %q, %q, %v; want %q, %q", tt.in, engine, driver, err, tt.engine, want)
		}
	}
}

// A DSN that is none of the forms is refused with the list of forms, not
// with a driver's parse error, and no refusal repeats the password.
func TestParseRefusals(t *testing.T) {
	tests := []struct {
		in   string
		want string // in the message
	}{
		{"junk", "accepted forms: "},
		{"secret-password", "accepted forms: "},
		{"localhost:3306", "accepted forms: "},
		{"user:secret@localhost/db", "accepted forms: "}, // no tcp(…): the driver would read a network "localhost"
		{"user:secret@localhost(3306)/db", "accepted forms: "},
		{"sqlite:///data/modelgate.db", "accepted forms: "},
		{"POSTGRES://u:secret@db/test", "accepted forms: "},
		{"http://u:secret@db/test", "accepted forms: "},
		{"a=b c=d", "accepted forms: "},
		{"host=db password='secret", "PostgreSQL keyword/value form: password: unterminated quoted value"},
		{"host=db password secret", "PostgreSQL keyword/value form: a word without ="},
		{"host=db user=mg secret dbname=x", "PostgreSQL keyword/value form: a word without ="},
		{"host=db password='it''secret' dbname=y", "PostgreSQL keyword/value form: password: a space must follow the quoted value"},
		{"host=db password='secret'x dbname=y", "PostgreSQL keyword/value form: password: a space must follow the quoted value"},
		{"postgres://u:secret@db:port/test", "PostgreSQL URL: not a valid URL"},
		{"mysql://u:secret@db:port/test", "MySQL URL: not a valid"},
		{"mysql://u:secret@db:3306", "MySQL URL: the path must name one database"},
		{"mysql://u:secret@db:3306/a/b", "MySQL URL: the path must name one database"},
		{"mysql://u:secret@db:3306/a?parseTime=maybe", "MySQL URL: invalid bool value: maybe"},
		{"u:secret@tcp(db:3306/test", "MySQL/MariaDB DSN: the driver cannot read it"},
		{"u:se/cret@tcp(db:3306)", "MySQL/MariaDB DSN: the driver cannot read it"}, // the driver would quote "se" and "cret@tcp(db:3306)"
		{"u:se/cret@tcp(db:3306)/test?parseTime=maybe", "MySQL/MariaDB DSN: invalid bool value: maybe"},
		{"u:secret@tcp(db:3306)/test?parseTime=maybe", "MySQL/MariaDB DSN: invalid bool value: maybe"},
	}
	for _, tt := range tests {
		engine, driver, err := Parse(tt.in)
		if err == nil {
			t.Errorf("Parse(%q) = %q, %q; want an error", tt.in, engine, driver)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q): %v; want it to contain %q", tt.in, err, tt.want)
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("Parse(%q): the message repeats the password: %v", tt.in, err)
		}
		if strings.Contains(tt.want, "accepted forms") && !errors.Is(err, ErrUnrecognised) {
			t.Errorf("Parse(%q): %v is not ErrUnrecognised", tt.in, err)
		}
	}
}

// Parse never panics, and what it hands a driver is recognised again as the
// same engine (the store parses what configuration validated).
func FuzzParse(f *testing.F) {
	for _, s := range []string{"", "host=db password='p w' dbname=x", "mysql://u:p%2F@h:3306/db?loc=UTC",
		"u:p@tcp(h:3306)/db?parseTime=true", "postgres://u:p@h/db", "junk", "host='", `dbname=a\`, "mysql://000%0A@0/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		engine, driver, err := Parse(s)
		if err != nil {
			return
		}
		again, _, err := Parse(driver)
		if engine != SQLite && (err != nil || again != engine) {
			t.Fatalf("Parse(%q) = %s %q, which parses as %s, %v", s, engine, driver, again, err)
		}
	})
}
