package bedrock

import (
	"bytes"
	"io"
	"testing"
)

func TestDialectKeyRefused(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"message":"The request signature we calculated does not match the signature you provided."}`, true},
		{`{"message":"The security token included in the request is invalid."}`, true},
		{`{"message":"You don't have access to the model with the specified model ID."}`, false},
		{`{"__type":"ValidationException","message":"bad"}`, false},
		{`not json`, true}, // a 403 of Bedrock without a name: the credentials
	} {
		if got := (Dialect{}).KeyRefused(403, []byte(tc.body)); got != tc.want {
			t.Errorf("403 %s: key refused %v, want %v", tc.body, got, tc.want)
		}
	}
}

func TestDialectURLsAndBody(t *testing.T) {
	d, err := Dialect{}.Bind("", "AKIAGATEWAYTEST00001|secret|eu-west-3", "")
	if err != nil {
		t.Fatal(err)
	}
	if got := d.(Dialect).NativeURL("", "/v1/messages", "us.anthropic.claude-sonnet-4-20250514-v1:0", true); got !=
		"https://bedrock-runtime.eu-west-3.amazonaws.com/model/us.anthropic.claude-sonnet-4-20250514-v1%3A0/invoke-with-response-stream" {
		t.Errorf("native url %s", got)
	}
	if (Dialect{}).NativeModel("amazon.nova-pro-v1:0") || !(Dialect{}).NativeModel("global.anthropic.claude-opus-4-1-20250805-v1:0") {
		t.Error("NativeModel")
	}
	h := map[string][]string{"Anthropic-Beta": {"a, b", "c"}}
	body, err := (Dialect{}).PassthroughBody([]byte(`{"model":"m","stream":true,"max_tokens":5,"thinking":{"type":"enabled"}}`), h, true)
	if err != nil || !bytes.Contains(body, []byte(`"anthropic_beta":["a","b","c"]`)) || bytes.Contains(body, []byte(`"model"`)) ||
		bytes.Contains(body, []byte(`"stream"`)) || !bytes.Contains(body, []byte(`"thinking":{"type":"enabled"}`)) {
		t.Errorf("passthrough body %s %v", body, err)
	}
}

// A stream cut inside a frame is an error of the SSE text, never a clean
// end.
func TestDialectSSECut(t *testing.T) {
	r := (Dialect{}).SSE(bytes.NewReader([]byte{0, 0, 0, 200, 0, 0}))
	if _, err := io.ReadAll(r); err != io.ErrUnexpectedEOF {
		t.Errorf("cut stream read as %v", err)
	}
}
