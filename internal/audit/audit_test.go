package audit

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"key": true, "password": true, "access_token": true, "SMTPToken": true, "TurnstileSecretKey": true,
		"private_key": true, "GitHubClientSecret": true, "keys": true, "api_key": true, "cert_pem": true,
		"name": false, "max_tokens": false, "token_name": false, "models": false, "username": false,
		"RegisterEnabled": false, "quota": false, "keyword": false, "group": false, "base_url": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMaskJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"id":3,"name":"c","key":"sk-live-1\nsk-live-2","models":"gpt"}`, `{"id":3,"key":"***","models":"gpt","name":"c"}`},
		{`{"username":"bob","password":"hunter22hunter"}`, `{"password":"***","username":"bob"}`},
		{`{"key":"SMTPToken","value":"smtp-pass"}`, `{"key":"SMTPToken","value":"***"}`},
		{`{"key":"QuotaPerUnit","value":"500000"}`, `{"key":"QuotaPerUnit","value":"500000"}`},
		{`{"other":{"region":"us","secret_access_key":"AKIA"}}`, `{"other":{"region":"us","secret_access_key":"***"}}`},
		{`[{"keys":["a","b"],"key_count":2}]`, `[{"key_count":2,"keys":["***","***"]}]`},
		{`{"password":""}`, `{"password":""}`},
	} {
		got, _ := json.Marshal(MaskJSON([]byte(c.in)))
		if string(got) != c.want {
			t.Errorf("MaskJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
	if MaskJSON([]byte("-----BEGIN PRIVATE KEY-----")) != nil {
		t.Error("a body that is not JSON must not be recorded")
	}
	got, _ := json.Marshal(MaskJSON([]byte(`{"channel":{"key":"sk-secret"}}`)))
	if strings.Contains(string(got), "sk-secret") {
		t.Errorf("nested secret kept: %s", got)
	}
}
