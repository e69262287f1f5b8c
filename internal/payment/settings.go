package payment

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/msgtext"
)

// ChannelSetting is one channel's stored setting (spec: Payment channel
// configuration): whether it is enabled and its config (WechatConfig,
// AlipayConfig or BankConfig as JSON). It is stored as the option
// OptionKey(method), outside the option registry, so GET /api/option/
// never shows it.
type ChannelSetting struct {
	Enabled bool            `json:"enabled"`
	Config  json.RawMessage `json:"config"`
}

// OptionKey is the options-table key of a channel's setting.
func OptionKey(method string) string { return "payment." + method }

// IsChannel reports whether method is a configurable channel.
func IsChannel(method string) bool {
	for _, c := range Channels {
		if c == method {
			return true
		}
	}
	return false
}

// Mask replaces a secret in answers. Sent back unchanged in a save, it
// keeps the stored secret.
const Mask = "******"

// Messages of a channel save.
const (
	MsgConfigInvalid   = "支付配置无效"
	MsgConfigField     = "支付配置字段 %s 无效:不能含控制字符且不能超过 %d 字节"
	MsgConfigURL       = "支付配置字段 %s 必须是 http 或 https 地址"
	MsgPEMInvalid      = "上传的文件 %s 不是 PEM 格式"
	MsgPEMEncrypted    = "上传的私钥 %s 设置了密码,请上传不带密码的私钥"
	MsgPEMFieldUnknown = "该支付通道不接受上传文件 %s"
	maxKeyFieldBytes   = 16 << 10
	maxPlainFieldBytes = 1024
	maxNotesFieldBytes = 4096
	MaxPEMFileBytes    = 64 << 10
)

// FileFields are a channel's uploadable PEM files: form field → whether it
// is a private key (refused with a passphrase).
var FileFields = map[string]map[string]bool{
	MethodWechat: {"cert_file": false, "key_file": true},
	MethodAlipay: {"private_key_file": true, "public_key_file": false},
}

// NormalizeConfig reads a channel's config as sent: unknown fields are
// dropped, a secret sent back as Mask keeps the one in old, and every text
// field is checked. It returns the config to store, or a failure message
// (a format with its args).
func NormalizeConfig(method string, raw, old json.RawMessage) (json.RawMessage, string, []any) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		raw = []byte("{}")
	}
	var v any
	switch method {
	case MethodWechat:
		var c, o WechatConfig
		if json.Unmarshal(raw, &c) != nil {
			return nil, MsgConfigInvalid, nil
		}
		_ = json.Unmarshal(old, &o)
		if c.APIKey == Mask {
			c.APIKey = o.APIKey
		}
		v = c
	case MethodAlipay:
		var c, o AlipayConfig
		if json.Unmarshal(raw, &c) != nil {
			return nil, MsgConfigInvalid, nil
		}
		_ = json.Unmarshal(old, &o)
		if c.PrivateKey == Mask {
			c.PrivateKey = o.PrivateKey
		}
		v = c
	case MethodBank:
		var c BankConfig
		if json.Unmarshal(raw, &c) != nil {
			return nil, MsgConfigInvalid, nil
		}
		v = c
	default:
		return nil, MsgConfigInvalid, nil
	}
	out, _ := json.Marshal(v) // structs of strings always encode
	var fields map[string]string
	_ = json.Unmarshal(out, &fields)
	for name, text := range fields {
		if msg, args := checkField(name, text); msg != "" {
			return nil, msg, args
		}
	}
	return out, "", nil
}

// checkField refuses control characters (newlines allowed in keys and
// notes), invalid UTF-8, oversized values and non-HTTP URLs.
func checkField(name, text string) (string, []any) {
	limit, multiline := maxPlainFieldBytes, false
	switch name {
	case "private_key", "public_key":
		limit, multiline = maxKeyFieldBytes, true
	case "notes":
		limit, multiline = maxNotesFieldBytes, true
	}
	bad := len(text) > limit || !utf8.ValidString(text)
	for _, r := range text {
		if r < 0x20 && !(multiline && (r == '\n' || r == '\r' || r == '\t')) || r == 0x7f {
			bad = true
		}
	}
	if bad {
		return MsgConfigField, []any{name, limit}
	}
	if (name == "gateway" || name == "notify_url") && text != "" {
		u, err := url.Parse(text)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return MsgConfigURL, []any{name}
		}
	}
	return "", nil
}

// MaskedConfig is config as answers show it: secrets (api_key,
// private_key) replaced by Mask when set; file paths shown.
func MaskedConfig(method string, config json.RawMessage) any {
	switch method {
	case MethodWechat:
		var c WechatConfig
		_ = json.Unmarshal(config, &c)
		if c.APIKey != "" {
			c.APIKey = Mask
		}
		return c
	case MethodAlipay:
		var c AlipayConfig
		_ = json.Unmarshal(config, &c)
		if c.PrivateKey != "" {
			c.PrivateKey = Mask
		}
		return c
	default:
		var c BankConfig
		_ = json.Unmarshal(config, &c)
		return c
	}
}

// CheckPEM checks an uploaded file: PEM text, and for a private key no
// passphrase (an encrypted PKCS#8 block or a legacy Proc-Type ENCRYPTED
// header). It answers a failure message format and its args, or "".
func CheckPEM(field string, data []byte, private bool) (string, []any) {
	block, _ := pem.Decode(data)
	if block == nil {
		return MsgPEMInvalid, []any{field}
	}
	if private && (strings.Contains(block.Type, "ENCRYPTED") || strings.Contains(block.Headers["Proc-Type"], "ENCRYPTED")) {
		return MsgPEMEncrypted, []any{field}
	}
	return "", nil
}

// SetFile writes path into config's file field (cert_file, key_file,
// private_key_file, public_key_file).
func SetFile(method string, config json.RawMessage, field, path string) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(config, &m) != nil || m == nil {
		m = map[string]any{}
	}
	m[field] = path
	out, _ := json.Marshal(m)
	norm, msg, _ := NormalizeConfig(method, out, nil)
	if msg != "" {
		return config
	}
	return norm
}

// BankNote is the bank channel's pay.note in the payer's language: the
// transfer instructions and the order number to put in the remarks. The
// account's details and the operator's notes are data, shown as written.
func BankNote(lang msgtext.Lang, c BankConfig, orderNo string) string {
	return msgtext.Render(lang, "户名:%s;账号:%s;开户行:%s %s;转账备注请填写订单号 %s。%s",
		c.AccountName, c.AccountNo, c.BankName, c.Branch, orderNo, c.Notes)
}
