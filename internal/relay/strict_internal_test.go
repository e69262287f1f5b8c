package relay

import (
	"encoding/json"
	"reflect"
	"testing"
)

// withFields puts absent fields first in the order of their names,
// without decoding, and re-encodes a body that has one of them already.
func TestWithFields(t *testing.T) {
	set := []bodyField{{"stream_options", includeUsage}, {"max_tokens", []byte("512")}, {"model", []byte(`"m<2>"`)}}
	for _, tt := range []struct{ in, want string }{
		{`{"messages":[]}`, `{"max_tokens":512,"model":"m<2>","stream_options":{"include_usage":true},"messages":[]}`},
		{` { } `, ` {"max_tokens":512,"model":"m<2>","stream_options":{"include_usage":true} } `},
		{`{"n":"model_x","a":"xmodel"}`, `{"max_tokens":512,"model":"m<2>","stream_options":{"include_usage":true},"n":"model_x","a":"xmodel"}`},
	} {
		got, err := withFields([]byte(tt.in), set)
		if err != nil || string(got) != tt.want {
			t.Errorf("withFields(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	got, err := withFields([]byte(`{"model":"a","max_tokens":1,"x":2}`), set)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(got, &m); err != nil {
		t.Fatalf("%s: %v", got, err)
	}
	want := map[string]any{"model": "m<2>", "max_tokens": 512.0, "x": 2.0, "stream_options": map[string]any{"include_usage": true}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("rewritten = %s", got)
	}
	if !hasName([]byte(`{"a":"model"}`), "model") || hasName([]byte(`{"models":1}`), "model") || hasName([]byte(`model`), "model") {
		t.Error("hasName")
	}
}
