package gemini

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// golden compares got, as indented JSON, with the golden file path, or
// rewrites the file when -update is set.
func golden(t *testing.T, path string, got any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatalf("encode %s: %v", path, err)
	}
	if *update {
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("%s differs (go test -update rewrites it)\n--- got\n%s--- want\n%s", path, buf.Bytes(), want)
	}
}

// cases returns the inputs under testdata/dir with extension ext, each with
// its golden file's path. It fails when there are none, so a renamed
// directory cannot turn a test into a no-op.
func cases(t *testing.T, dir, ext string) map[string]string {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join("testdata", dir, "*"+ext))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no testdata/%s/*%s inputs (%v)", dir, ext, err)
	}
	out := map[string]string{}
	for _, in := range inputs {
		out[in] = strings.TrimSuffix(in, ext) + ".golden"
	}
	return out
}

// decodeFile decodes a JSON testdata file. Strict decoding rejects unknown
// fields, so a typo in a request input cannot pass silently; Gemini
// responses are read loosely, as the relay reads them, since real ones carry
// fields the package ignores.
func decodeFile(t *testing.T, path string, v any, strict bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
}
