package jsonbody_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/relay/jsonbody"
)

func TestRewrite(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		drop     []string
		set      []jsonbody.Member
		want     string
	}{
		{"keeps bytes and order", `{ "b" : [1, 2],"a":{"x" : "\u00e9"} }`, nil, nil, `{"b":[1, 2],"a":{"x" : "\u00e9"}}`},
		{"drops", `{"model":"m","x":1,"stream":true}`, []string{"model", "stream"}, nil, `{"x":1}`},
		{"replaces in place", `{"a":1,"model":"m","b":2}`, nil, []jsonbody.Member{{Name: "model", Value: jsonbody.String("dep")}}, `{"a":1,"model":"dep","b":2}`},
		{"appends", `{"a":1}`, nil, []jsonbody.Member{{Name: "v", Value: []byte(`"x"`)}}, `{"a":1,"v":"x"}`},
		{"empty object", `{}`, nil, []jsonbody.Member{{Name: "v", Value: []byte(`1`)}}, `{"v":1}`},
		{"duplicate members collapse to the set value", `{"model":"a","model":"b"}`, nil, []jsonbody.Member{{Name: "model", Value: []byte(`"c"`)}}, `{"model":"c"}`},
		{"a dropped name can be set anew", `{"a":1}`, []string{"a"}, []jsonbody.Member{{Name: "a", Value: []byte(`2`)}}, `{"a":2}`},
		{"quotes and brackets inside strings", `{"a":"he said \"}\" [ok","b":"c:\\","d":["]",{"e":"}"}]}`, []string{"b"}, nil, `{"a":"he said \"}\" [ok","d":["]",{"e":"}"}]}`},
		{"scalars", `{"n":-1.5e3,"t":true,"f":false,"z":null}`, []string{"t"}, nil, `{"n":-1.5e3,"f":false,"z":null}`},
		{"NUL escapes pass", `{"t":"a\u0000b"}`, nil, nil, `{"t":"a\u0000b"}`},
	} {
		got, err := jsonbody.Rewrite([]byte(tc.in), tc.drop, tc.set...)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestRewriteRefuses(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `"s"`, `{"a":1}{"b":2}`, `{"a":}`, `{"a":1,}`, `{"a":1`,
		"{\"a\":\"\xff\"}", "{\"\xfe\":1}", `{"a":[}`, `{"a":{]}`, `{"a":"x\"}`, `{"a":tru}`, `{"a":1 2}`,
		`{"a" 1}`, `{,}`, `{"a":1}x`, `{"a":[1,2]`, `{"a":"unterminated`, `{a:1}`, `{"a":01}`} {
		if _, err := jsonbody.Rewrite([]byte(in), nil); err == nil {
			t.Errorf("Rewrite(%q) accepted", in)
		}
	}
	if _, err := jsonbody.Rewrite([]byte("{\"a\":\"\xff\"}"), nil); !errors.Is(err, jsonbody.ErrInvalidUTF8) {
		t.Errorf("err %v, want ErrInvalidUTF8", err)
	}
	if _, err := jsonbody.Rewrite([]byte(`{}`), nil, jsonbody.Member{Name: "a", Value: []byte(`{bad`)}); err == nil {
		t.Error("invalid set value accepted")
	}
}

func TestGet(t *testing.T) {
	v, ok, err := jsonbody.Get([]byte(`{"model":"m","n":{"model":"inner"}}`), "model")
	if err != nil || !ok || string(v) != `"m"` {
		t.Fatalf("%s %v %v", v, ok, err)
	}
	if _, ok, _ := jsonbody.Get([]byte(`{"n":{"model":"inner"}}`), "model"); ok {
		t.Fatal("found a nested member")
	}
}

// BenchmarkRewrite measures the Bedrock/Vertex Claude rewrite of a coding
// agent's turn: a 1 MiB Messages body.
func BenchmarkRewrite(b *testing.B) {
	text := strings.Repeat("x", 1<<20)
	body := []byte(`{"model":"claude","max_tokens":32000,"stream":true,"messages":[{"role":"user","content":"` + text + `"}]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := jsonbody.Rewrite(body, []string{"model", "stream"}, jsonbody.Member{Name: "anthropic_version", Value: jsonbody.String("bedrock-2023-05-31")}); err != nil {
			b.Fatal(err)
		}
	}
}

// FuzzRewrite checks the walk against encoding/json: every valid object is
// split, and what it writes back decodes to the same value, with a member
// dropped and one set as asked.
func FuzzRewrite(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, `{"a":"\"}","b":[{"c":"]"}],"d":null}`, `{"a":"\\","b":-0.5e-3}`, ` { "x" : { } } `, `{"k":"\u00e9\ud83d\ude00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var orig map[string]any
		if json.Unmarshal(in, &orig) != nil || !json.Valid(in) || !utf8.Valid(in) || orig == nil {
			return // invalid UTF-8 is refused on purpose (TestRewriteRefuses)
		}
		out, err := jsonbody.Rewrite(in, []string{"drop"}, jsonbody.Member{Name: "set", Value: []byte(`[1]`)})
		if err != nil {
			t.Fatalf("Rewrite(%q): %v", in, err)
		}
		var got map[string]any
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("Rewrite(%q) = %q: %v", in, out, err)
		}
		delete(orig, "drop")
		orig["set"] = []any{1.0}
		if !reflect.DeepEqual(got, orig) {
			t.Fatalf("Rewrite(%q) = %q", in, out)
		}
	})
}
