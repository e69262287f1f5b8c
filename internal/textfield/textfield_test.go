package textfield

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestValidate(t *testing.T) {
	name := Field{Label: "名称", MaxChars: 5}
	text := Field{Label: "备注", MaxBytes: 8, Multiline: true}
	bad := fmt.Sprintf(MsgInvalidChars, "名称")
	badText := fmt.Sprintf(MsgInvalidChars, "备注")
	for _, tc := range []struct {
		f    Field
		in   string
		want string
	}{
		{name, "", ""},
		{name, "abcde", ""},
		{name, "模型名称五", ""}, // five characters, fifteen bytes: the column counts characters
		{name, "abcdef", fmt.Sprintf(MsgTooLong, "名称", 5)},
		{name, "a\x00b", bad},
		{name, "a\xffb", bad},
		{name, "\xe6\xa8", bad}, // a rune cut in half
		{name, "a\tb", bad},
		{name, "a\nb", bad},
		{name, "a\x7fb", bad},
		{name, "a\u0085b", bad}, // C1 control (NEL)
		{name, "a\u2028b", bad},
		{name, "a\ufffdb", ""}, // the replacement character itself is text
		{name, "😀😀😀😀😀", ""},
		{name, "a\x00bcdefgh", bad}, // characters are reported before the length
		{text, "a\tb\r\nc", ""},
		{text, "a\x00", badText},
		{text, "a\u2028b", ""},
		{text, "123456789", fmt.Sprintf(MsgTooLongBytes, "备注", 8)},
		{text, "模型名", fmt.Sprintf(MsgTooLongBytes, "备注", 8)}, // 9 bytes
	} {
		if got := tc.f.Validate(tc.in); got != tc.want {
			t.Errorf("%s.Validate(%q) = %q, want %q", tc.f.Label, tc.in, got, tc.want)
		}
	}
}

func TestClean(t *testing.T) {
	key := Field{Label: "X-Session-Key", MaxChars: 4}
	text := Field{Label: "备注", MaxBytes: 7, Multiline: true}
	for _, tc := range []struct {
		f    Field
		in   string
		want string
	}{
		{key, "abcd", "abcd"},
		{key, "abcdef", "abcd"},
		{key, "a\xffb\x00c\td", "abcd"},
		{key, "  ab  ", "ab"},
		{key, "ab  cd", "ab"},  // cut, then the trailing space trimmed
		{key, "会话标识符", "会话标识"}, // cut at a character, not a byte
		{key, "\xff\xfe", ""},
		{key, "😀😀😀😀😀", "😀😀😀😀"},
		{text, "a\tb\nc", "a\tb\nc"},
		{text, "a\x00b", "ab"},
		{text, "会话标识", "会话"},  // 12 bytes: cut to 6, a whole rune boundary
		{text, "ab会话", "ab会"}, // 8 bytes: cut inside 话, dropped whole
		{Field{Label: "n"}, strings.Repeat("x", 300), strings.Repeat("x", 300)},
	} {
		got := tc.f.Clean(tc.in)
		if got != tc.want {
			t.Errorf("%s.Clean(%q) = %q, want %q", tc.f.Label, tc.in, got, tc.want)
		}
		if msg := tc.f.Validate(got); msg != "" {
			t.Errorf("%s.Clean(%q) = %q does not validate: %s", tc.f.Label, tc.in, got, msg)
		}
		if again := tc.f.Clean(got); again != got {
			t.Errorf("%s.Clean is not idempotent on %q: %q", tc.f.Label, got, again)
		}
		if !utf8.ValidString(got) {
			t.Errorf("%s.Clean(%q) = %q is not UTF-8", tc.f.Label, tc.in, got)
		}
	}
}
