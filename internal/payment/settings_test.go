package payment

import (
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
)

func TestNormalizeConfig(t *testing.T) {
	old := json.RawMessage(`{"app_id":"a","api_key":"stored"}`)
	for _, c := range []struct {
		name, method, raw, want, msg string
	}{
		{"drops unknown, keeps masked secret", MethodWechat, `{"app_id":"b","api_key":"******","x":1}`, `"api_key":"stored"`, ""},
		{"new secret", MethodWechat, `{"api_key":"new"}`, `"api_key":"new"`, ""},
		{"null config", MethodBank, `null`, `"account_name":""`, ""},
		{"NUL", MethodBank, `{"notes":"a\u0000b"}`, "", MsgConfigField},
		{"newline in a one-line field", MethodBank, `{"account_no":"1\n2"}`, "", MsgConfigField},
		{"newline in notes", MethodBank, `{"notes":"line 1\nline 2"}`, `line 1\nline 2`, ""},
		{"too long", MethodWechat, `{"app_id":"` + strings.Repeat("a", 1025) + `"}`, "", MsgConfigField},
		{"bad gateway", MethodAlipay, `{"gateway":"javascript:alert(1)"}`, "", MsgConfigURL},
		{"good gateway", MethodAlipay, `{"gateway":"http://127.0.0.1:9/gateway.do"}`, `"gateway":"http://127.0.0.1:9/gateway.do"`, ""},
		{"not an object", MethodBank, `[1]`, "", MsgConfigInvalid},
		{"wrong type", MethodWechat, `{"app_id":1}`, "", MsgConfigInvalid},
		{"unknown method", "paypal", `{}`, "", MsgConfigInvalid},
	} {
		got, msg, _ := NormalizeConfig(c.method, json.RawMessage(c.raw), old)
		if msg != c.msg || !strings.Contains(string(got), c.want) {
			t.Errorf("%s: got %s %q, want %q %q", c.name, got, msg, c.want, c.msg)
		}
		if strings.Contains(string(got), `"x"`) {
			t.Errorf("%s: unknown field kept: %s", c.name, got)
		}
	}
}

func TestMaskedConfigAndPEM(t *testing.T) {
	m, _ := json.Marshal(MaskedConfig(MethodAlipay, json.RawMessage(`{"private_key":"k","private_key_file":"/data/p.pem"}`)))
	if strings.Contains(string(m), `"k"`) || !strings.Contains(string(m), Mask) || !strings.Contains(string(m), "/data/p.pem") {
		t.Fatalf("masked: %s", m)
	}
	plain := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
	enc := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}})
	for _, c := range []struct {
		data    []byte
		private bool
		want    string
	}{
		{plain, true, ""}, {enc, true, MsgPEMEncrypted}, {enc, false, ""}, {[]byte("nope"), false, MsgPEMInvalid},
	} {
		if got, _ := CheckPEM("f", c.data, c.private); got != c.want {
			t.Errorf("CheckPEM(%q, %v) = %q, want %q", c.data, c.private, got, c.want)
		}
	}
}
