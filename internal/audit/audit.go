// Package audit owns the rules of the admin audit trail (issue 30 §4):
// which values are secrets and how a request, or a row before and after,
// is masked before it is stored. The recorder that calls it lives with
// the /api routes; the rows live in store (audit_logs).
package audit

import (
	"encoding/json"
	"strings"
)

// Masked replaces every secret value in a detail.
const Masked = "***"

// secretWords mark a field (or an option) name as holding a secret: keys
// (channel keys, API keys, payment private keys, redemption codes),
// passwords, secrets, tokens and certificates. Matched case-insensitively
// on the name with separators removed.
var secretWords = []string{"key", "password", "secret", "token", "cert", "pem", "credential", "signature", "sign"}

// notSecret are names containing a secret word that hold counts, names or
// flags, never a secret.
var notSecret = map[string]bool{
	"maxtokens": true, "prompttokens": true, "completiontokens": true, "tokenname": true, "tokenid": true,
	"tokens": true, "tokencount": true, "keycount": true, "keyindex": true, "keys_count": true,
	"signupenabled": true, "registerenabled": true, "keyword": true,
}

// IsSecretName reports whether a field or option named name holds a
// secret.
func IsSecretName(name string) bool {
	n := strings.ToLower(strings.NewReplacer("_", "", "-", "", ".", "").Replace(name))
	if notSecret[n] || strings.HasSuffix(n, "enabled") || strings.HasSuffix(n, "count") || strings.HasSuffix(n, "limit") {
		return false
	}
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// MaskJSON parses raw and returns it with secrets masked: every value
// under a secret name (a string, or a list or object of them, whatever
// it holds), and an option's value when the object is an option
// ({"key": name, "value": …}) whose name is a secret. Anything that is not
// JSON comes back as nil: the caller records no body rather than one it
// cannot inspect.
func MaskJSON(raw []byte) any {
	var v any
	if len(raw) == 0 || json.Unmarshal(raw, &v) != nil {
		return nil
	}
	return Mask(v)
}

// Mask returns v (decoded JSON) with its secrets masked.
func Mask(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		name, isOption := t["key"].(string)
		_, hasValue := t["value"]
		isOption = isOption && hasValue
		for k, val := range t {
			switch {
			case isOption && k == "key":
				out[k] = val // the option's name, not a secret
			case isOption && k == "value":
				out[k] = maskIf(IsSecretName(name), val)
			case IsSecretName(k):
				out[k] = maskAll(val)
			default:
				out[k] = Mask(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = Mask(e)
		}
		return out
	}
	return v
}

func maskIf(secret bool, v any) any {
	if secret {
		return maskAll(v)
	}
	return Mask(v)
}

// maskAll masks every non-empty leaf of v: numbers and booleans stay (a
// flag or a count says nothing secret), strings go.
func maskAll(v any) any {
	switch t := v.(type) {
	case string:
		if t == "" {
			return t
		}
		return Masked
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = maskAll(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = maskAll(e)
		}
		return out
	}
	return v
}
