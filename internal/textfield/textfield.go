// Package textfield owns the rules for text taken from a request before it
// reaches storage or a query: it must be valid UTF-8, hold no NUL or other
// control characters, and fit its column.
//
// Why: PostgreSQL refuses a NUL byte and invalid UTF-8 in any text value,
// PostgreSQL and MySQL (strict mode) refuse a value longer than its column,
// while SQLite takes all three. Before these rules such a value answered 200
// on SQLite and 500 on the shared engines, and in a consume log it poisoned
// the ledger's group commit (issue 6). Lengths are counted in the unit of
// the column: characters (runes) for varchar(N) on PostgreSQL and for GORM
// size:N on MySQL utf8mb4, bytes for a MySQL TEXT column (65,535).
//
// Two uses: Validate refuses bad input with a message naming the field and
// changes nothing (/api input, whose sender can correct it); Clean turns any
// input into a storable value (/v1 headers, where refusing a paid call over a
// label would be harsher than keeping what is usable of it).
package textfield

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TextColumnBytes is what a TEXT column holds on MySQL, the smallest of the
// engines: a free-text field stored there needs MaxBytes at most this.
const TextColumnBytes = 65535

// Messages. %s is the field's label.
const (
	MsgInvalidChars = "%s 含有无效字符:须为 UTF-8 文本,不能含 NUL 或控制字符"
	MsgTooLong      = "%s 不能超过 %d 个字符"
	MsgTooLongBytes = "%s 不能超过 %d 字节"
)

// Field is the rule of one text field.
type Field struct {
	// Label names the field in messages, e.g. "显示名称" or "参数 keyword".
	Label string
	// MaxChars is the column's length in characters (runes); 0: no limit.
	MaxChars int
	// MaxBytes bounds the UTF-8 length (a MySQL TEXT column); 0: no limit.
	MaxBytes int
	// Multiline admits tab, line feed and carriage return: free text such
	// as remarks, option values or a channel key. Names, keys, keywords and
	// headers are single-line.
	Multiline bool
}

// Validate returns "" when s may be stored as it is, else a message naming
// the field: invalid characters first, then the length.
func (f Field) Validate(s string) string {
	if !f.validChars(s) {
		return fmt.Sprintf(MsgInvalidChars, f.Label)
	}
	if f.MaxChars > 0 && utf8.RuneCountInString(s) > f.MaxChars {
		return fmt.Sprintf(MsgTooLong, f.Label, f.MaxChars)
	}
	if f.MaxBytes > 0 && len(s) > f.MaxBytes {
		return fmt.Sprintf(MsgTooLongBytes, f.Label, f.MaxBytes)
	}
	return ""
}

// Clean returns s made storable: invalid UTF-8 and disallowed characters
// are dropped, surrounding white space trimmed, and the rest cut at a
// character boundary to the field's limits. Clean(s) == s when
// Validate(s) == "" and s has no surrounding space.
func (f Field) Clean(s string) string {
	if f.validChars(s) {
		s = strings.TrimSpace(s)
	} else {
		var b strings.Builder
		for _, r := range strings.ToValidUTF8(s, "") {
			if f.allowed(r) {
				b.WriteRune(r)
			}
		}
		s = strings.TrimSpace(b.String())
	}
	if f.MaxChars > 0 {
		n := 0
		for i := range s {
			if n == f.MaxChars {
				s = s[:i]
				break
			}
			n++
		}
	}
	// A cut can leave white space at the end: trim again, so that cleaning
	// a cleaned value changes nothing.
	return strings.TrimRightFunc(trimBytes(s, f.MaxBytes), unicode.IsSpace)
}

// trimBytes cuts s to at most max bytes (0: no limit) at a rune boundary.
func trimBytes(s string, max int) string {
	if max <= 0 || len(s) <= max {
		return s
	}
	s = s[:max]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1] // a rune cut in half
	}
	return s
}

func (f Field) validChars(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !f.allowed(r) {
			return false
		}
	}
	return true
}

// allowed reports whether r may appear in the field. Control characters
// (C0, DEL, C1: NUL among them) never may; tab, line feed and carriage
// return only in multiline text. Line and paragraph separators (U+2028,
// U+2029) end a line too, so single-line fields refuse them as well.
func (f Field) allowed(r rune) bool {
	switch {
	case r == '\t' || r == '\n' || r == '\r':
		return f.Multiline
	case unicode.IsControl(r):
		return false
	case r == '\u2028' || r == '\u2029':
		return f.Multiline
	}
	return true
}
