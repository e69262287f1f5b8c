package channel

import (
	"encoding/json"
	"strings"

	"github.com/modelgate/modelgate/internal/textfield"
)

// The channel's setting field is a JSON object of per-channel options, as
// new-api stores it (its other keys are kept as they are, so an imported
// channel keeps them). The one modelgate reads is responses_api.
const (
	// ResponsesAuto: ask the upstream natively, switch to conversion when
	// it answers /v1/responses with 404 or 405 (the default).
	ResponsesAuto = "auto"
	// ResponsesNative: always pass /v1/responses through.
	ResponsesNative = "native"
	// ResponsesConvert: always convert through chat completions.
	ResponsesConvert = "convert"
)

// MsgSettingInvalid refuses a setting that is not a JSON object, or whose
// responses_api is not one of the three values.
const MsgSettingInvalid = "渠道设置必须是 JSON 对象,responses_api 可选 auto、native、convert"

// settingText: the setting is one JSON text in a TEXT column.
var settingText = textfield.Field{Label: "渠道设置", MaxBytes: textfield.TextColumnBytes, Multiline: true}

// channelSetting is the part of the setting modelgate reads.
type channelSetting struct {
	ResponsesAPI *string `json:"responses_api"`
}

// NormalizeSetting checks that text is empty or a JSON object whose
// responses_api, when present, is auto, native or convert; it returns the
// text trimmed.
func NormalizeSetting(text string) (string, string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", ""
	}
	if msg := settingText.Validate(text); msg != "" {
		return "", msg
	}
	var s channelSetting
	if !strings.HasPrefix(text, "{") || json.Unmarshal([]byte(text), &s) != nil {
		return "", MsgSettingInvalid
	}
	if s.ResponsesAPI != nil {
		switch *s.ResponsesAPI {
		case ResponsesAuto, ResponsesNative, ResponsesConvert:
		default:
			return "", MsgSettingInvalid
		}
	}
	return text, ""
}

// ResponsesAPIOf is the responses_api of a stored setting: auto when absent
// or unreadable.
func ResponsesAPIOf(setting string) string {
	var s channelSetting
	if setting == "" || json.Unmarshal([]byte(setting), &s) != nil || s.ResponsesAPI == nil {
		return ResponsesAuto
	}
	switch *s.ResponsesAPI {
	case ResponsesNative, ResponsesConvert:
		return *s.ResponsesAPI
	}
	return ResponsesAuto
}
