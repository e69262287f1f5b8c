package jsonbody_test

import (
	"errors"
	"testing"

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
		{"NUL escapes pass", `{"t":"a\u0000b"}`, nil, nil, `{"t":"a\u0000b"}`},
	} {
		got, err := jsonbody.Rewrite([]byte(tc.in), tc.drop, tc.set...)
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s, %v; want %s", tc.name, got, err, tc.want)
		}
	}
}

func TestRewriteRefuses(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `"s"`, `{"a":1}{"b":2}`, `{"a":}`, `{"a":1,}`, `{"a":1`, "{\"a\":\"\xff\"}", "{\"\xfe\":1}"} {
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
