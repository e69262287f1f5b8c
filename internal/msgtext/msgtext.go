// Package msgtext owns the language of the messages /api and /v1 answer:
// the language type, the English text of every Chinese message the spec
// does not fix (table.go), and the rendering of a message in the language
// the runtime option MessageLanguage chooses.
//
// Handlers and validators keep returning the Chinese constants; the
// translation happens when a response is written, so a message is one
// constant in the code and one line in the table. A message reaches the
// writer either as a format with its arguments (httpx.Failf, relay errf:
// Render) or already formatted (a validator's string: Message), which is
// matched back against the table's formats. The spec's messages (spec.go)
// are never translated.
package msgtext

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Lang is a message language.
type Lang string

const (
	// Chinese is the default: the messages as written in the code.
	Chinese Lang = "zh"
	// English renders every message the spec does not fix in English.
	English Lang = "en"
)

// ErrLang is ParseLang's refusal; its text ends up in the admin's failure
// message (option MessageLanguage).
var ErrLang = errors.New(MsgLangInvalid)

// MsgLangInvalid refuses a MessageLanguage other than zh or en.
const MsgLangInvalid = "必须是 zh 或 en"

// ParseLang reads an option value: "zh" or "en", exactly.
func ParseLang(v string) (Lang, error) {
	switch Lang(v) {
	case Chinese, English:
		return Lang(v), nil
	}
	return "", ErrLang
}

// Render formats a message in lang. format is a Chinese constant (or a
// text that is not Chinese, which stays as it is); arguments are data and
// are shown as given, except those the table marks as labels (a field
// name, a nested message), which are rendered in lang too. With no
// arguments the format is the message itself (as httpx.Fail always took
// it): Render(lang, msg) is Message(lang, msg).
func Render(lang Lang, format string, args ...any) string {
	if len(args) == 0 {
		return Message(lang, format)
	}
	e, ok := english[format]
	if lang != English || !ok {
		return fmt.Sprintf(format, args...)
	}
	args = slices.Clone(args)
	for _, i := range e.labels {
		if i < len(args) {
			args[i] = Message(lang, text(args[i]))
		}
	}
	return fmt.Sprintf(e.text, args...)
}

// Message renders an already formatted Chinese message in lang: a message
// of the table as it is, else one that one of the table's formats produced
// (its arguments recovered by matching the format, labels among them
// rendered too). A message of the spec, or one nothing matches (a Go error
// text, an upstream's words), is returned unchanged.
func Message(lang Lang, msg string) string {
	if lang != English || msg == "" {
		return msg
	}
	if Fixed(msg) {
		return msg
	}
	if e, ok := english[msg]; ok {
		return e.text
	}
	for _, p := range compiled() {
		m := p.re.FindStringSubmatch(msg)
		if m == nil {
			continue
		}
		args := make([]any, len(m)-1)
		for i := range args {
			args[i] = m[i+1]
		}
		for _, i := range p.labels {
			args[i] = Message(lang, m[i+1])
		}
		return fmt.Sprintf(p.text, args...)
	}
	return msg
}

// text is the message an argument stands for.
func text(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case error:
		return v.Error()
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(a)
}

// entry is the English of one Chinese message or format. labels are the
// indexes (from 0) of the arguments that are labels: rendered in the
// language too. Every other argument is data (a username, a model name, an
// upstream's text) and is never translated.
type entry struct {
	text   string
	labels []int
}

// pattern matches a formatted message back to its format.
type pattern struct {
	re     *regexp.Regexp
	text   string // the English format, every verb as %s (arguments are recovered as text)
	labels []int
	fixed  bool // a spec format: the message stays as it is
	weight int  // literal length: more specific formats are tried first
}

var (
	patternsOnce sync.Once
	patterns     []pattern
)

// compiled returns the patterns of every format with verbs, spec formats
// first, then the most specific (longest literal text) first, so that a
// format that is a prefix of another never wins over it.
func compiled() []pattern {
	patternsOnce.Do(func() {
		for _, f := range specFixed {
			if re, w, ok := formatPattern(f); ok {
				patterns = append(patterns, pattern{re: re, fixed: true, weight: w})
			}
		}
		for f, e := range english {
			if re, w, ok := formatPattern(f); ok {
				patterns = append(patterns, pattern{re: re, text: verbsAsText(e.text), labels: e.labels, weight: w})
			}
		}
		slices.SortStableFunc(patterns, func(a, b pattern) int {
			if a.fixed != b.fixed {
				if a.fixed {
					return -1
				}
				return 1
			}
			if a.weight != b.weight {
				return b.weight - a.weight
			}
			return strings.Compare(a.re.String(), b.re.String())
		})
	})
	return patterns
}

// verbRE finds the verbs a message format may use.
var verbRE = regexp.MustCompile(`%[-+# 0]*[0-9]*(?:\.[0-9]+)?[a-zA-Z%]`)

// formatPattern turns a format into an anchored expression with one group
// per verb; ok is false for a format without verbs.
func formatPattern(format string) (*regexp.Regexp, int, bool) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	weight, last, groups := 0, 0, 0
	for _, loc := range verbRE.FindAllStringIndex(format, -1) {
		lit := format[last:loc[0]]
		weight += len(lit)
		b.WriteString(regexp.QuoteMeta(lit))
		last = loc[1]
		switch verb := format[loc[1]-1]; verb {
		case '%':
			b.WriteString(`%`)
		case 'd':
			b.WriteString(`(-?[0-9]+)`)
			groups++
		default:
			b.WriteString(`(.*?)`)
			groups++
		}
	}
	if groups == 0 {
		return nil, 0, false
	}
	weight += len(format[last:])
	b.WriteString(regexp.QuoteMeta(format[last:]))
	b.WriteString(`$`)
	return regexp.MustCompile(b.String()), weight, true
}

// verbsAsText makes every verb of an English format a %s: the arguments a
// match recovers are text ("191", not 191).
func verbsAsText(format string) string {
	return verbRE.ReplaceAllStringFunc(format, func(v string) string {
		if v == "%%" {
			return v
		}
		return "%s"
	})
}

// verbs lists the verbs of a format in order, for the table's test.
func verbs(format string) []string {
	var out []string
	for _, v := range verbRE.FindAllString(format, -1) {
		if v != "%%" {
			out = append(out, v)
		}
	}
	return out
}
