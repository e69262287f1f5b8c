// Package channel holds the rules of upstream channels: the supported
// provider types and their default base URLs, statuses, and how the admin's
// text fields (model list, group list, base URL, model mapping) are cleaned
// and validated before they are stored.
package channel

import (
	"encoding/json"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/textfield"
	"github.com/modelgate/modelgate/internal/user"
)

// Provider types. The numbers are the ones clients of the field's common
// layout already send (one-api), so an admin UI can keep its type picker.
const (
	TypeOpenAI    = 1  // OpenAI-compatible chat completions API
	TypeAnthropic = 14 // Anthropic messages API
	TypeGemini    = 24 // Google Gemini API
	TypeAzure     = 3  // Azure OpenAI (relay/azure)
	TypeBedrock   = 33 // AWS Bedrock (relay/bedrock)
	TypeVertex    = 41 // Google Vertex AI (relay/vertex)
)

// Statuses. Only an enabled channel serves requests; 3 is set by the relay
// when an upstream keeps failing, so the admin can tell the two apart.
const (
	StatusEnabled      = 1
	StatusDisabled     = 2 // by an admin
	StatusAutoDisabled = 3 // by the system
)

// DefaultGroup is the group of a channel created without one.
const DefaultGroup = user.DefaultGroup

// DefaultWeight is the weight of a channel created without one.
const DefaultWeight = 1

// Column limits of the stored channel and its abilities.
const (
	maxNameLen    = 128
	maxModelLen   = 191 // abilities.model
	maxGroupsLen  = 512 // channels.channel_groups
	maxBaseURLLen = 512
)

// Text rules of the stored fields (columns: store.Channel, store.Ability).
// Names, URLs and models are one line; the key and the mapping are free
// text in TEXT columns (a key may be a multi-line credential file).
var (
	nameText      = textfield.Field{Label: "渠道名称", MaxChars: maxNameLen}
	baseURLText   = textfield.Field{Label: "Base URL", MaxChars: maxBaseURLLen}
	modelText     = textfield.Field{Label: "模型名称", MaxChars: maxModelLen}
	modelListText = textfield.Field{Label: "模型列表", MaxBytes: textfield.TextColumnBytes}
	mappingText   = textfield.Field{Label: "模型映射", MaxBytes: textfield.TextColumnBytes, Multiline: true}
	keyText       = textfield.Field{Label: "密钥", MaxBytes: textfield.TextColumnBytes, Multiline: true}
	// lastErrorText is a failure kept on the channel: it quotes the
	// upstream, which may answer any bytes, often cut by bytes.
	lastErrorText = textfield.Field{Label: "last_error", MaxBytes: 4 << 10, Multiline: true}
)

// Validation messages.
const (
	MsgTypeInvalid         = "不支持的渠道类型,可选 1 (OpenAI 兼容)、3 (Azure OpenAI)、14 (Anthropic)、24 (Gemini)、33 (AWS Bedrock)、41 (Google Vertex AI)"
	MsgNameLength          = "渠道名称长度必须在 1 到 128 个字符之间"
	MsgBaseURLInvalid      = "Base URL 必须是 http 或 https 地址,且不能带查询参数"
	MsgModelsEmpty         = "模型列表不能为空"
	MsgModelNameTooLong    = "模型名称不能超过 191 个字符"
	MsgGroupsTooLong       = "分组列表不能超过 512 个字符"
	MsgModelMappingInvalid = "模型映射必须是 JSON 对象,键和值都是非空字符串"
	MsgWeightNegative      = "权重不能为负数"
	MsgStatusInvalid       = "无效的渠道状态,可选 1 (启用)、2 (手动禁用)、3 (自动禁用)"
	MsgTooManyKeys         = "一个渠道最多 100 个密钥"
)

var defaultBaseURLs = map[int]string{
	TypeOpenAI:    "https://api.openai.com",
	TypeAnthropic: "https://api.anthropic.com",
	TypeGemini:    "https://generativelanguage.googleapis.com",
	// Azure has no default (the resource endpoint is the operator's);
	// Bedrock's and Vertex's depend on the region, in the key or in
	// "other": empty stays empty and the provider package picks it.
	TypeAzure:   "",
	TypeBedrock: "",
	TypeVertex:  "",
}

// ValidType reports whether t is a supported provider type.
func ValidType(t int) bool {
	_, ok := defaultBaseURLs[t]
	return ok
}

// ValidStatus reports whether s is a channel status.
func ValidStatus(s int) bool {
	return s == StatusEnabled || s == StatusDisabled || s == StatusAutoDisabled
}

// Fields are the admin-editable settings of a channel, as stored: lists are
// comma-joined text.
type Fields struct {
	Type         int
	Name         string
	BaseURL      string
	Models       string
	Groups       string
	Priority     int64
	Weight       int64
	ModelMapping string
	Setting      string // JSON object (setting.go)
	// Other is the type's own setting: Azure's api-version, Vertex's
	// region (credentials.go); other types keep none.
	Other  string
	Status int
}

// Normalize cleans f in place (trims, applies defaults, dedupes the lists)
// and returns the first problem, or "" when f is valid.
func (f *Fields) Normalize() string {
	if !ValidType(f.Type) {
		return MsgTypeInvalid
	}
	f.Name = strings.TrimSpace(f.Name)
	if n := utf8.RuneCountInString(f.Name); n < 1 || n > maxNameLen {
		return MsgNameLength
	}
	if msg := nameText.Validate(f.Name); msg != "" {
		return msg
	}
	var msg string
	if f.BaseURL, msg = NormalizeBaseURL(f.Type, f.BaseURL); msg != "" {
		return msg
	}
	if f.Models, msg = NormalizeModels(f.Models); msg != "" {
		return msg
	}
	if f.Groups, msg = NormalizeGroups(f.Groups); msg != "" {
		return msg
	}
	if f.ModelMapping, msg = NormalizeModelMapping(f.ModelMapping); msg != "" {
		return msg
	}
	if f.Setting, msg = NormalizeSetting(f.Setting); msg != "" {
		return msg
	}
	if f.Other, msg = NormalizeOther(f.Type, f.Other); msg != "" {
		return msg
	}
	if f.Weight < 0 {
		return MsgWeightNegative
	}
	if !ValidStatus(f.Status) {
		return MsgStatusInvalid
	}
	return ""
}

// Split parses a comma-separated list: items are trimmed, empty items and
// repeats dropped, first occurrence order kept. Repeats are found ignoring
// case because MySQL's default collation does: "GPT-4o" and "gpt-4o" would
// collide in the abilities' unique index there and nowhere else.
func Split(list string) []string {
	var out []string
	seen := map[string]bool{}
	for item := range strings.SplitSeq(list, ",") {
		item = strings.TrimSpace(item)
		key := strings.ToLower(item)
		if item == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, item)
	}
	return out
}

// NormalizeModels cleans a comma-separated model list; at least one model is
// required.
func NormalizeModels(list string) (string, string) {
	models := Split(list)
	if len(models) == 0 {
		return "", MsgModelsEmpty
	}
	for _, m := range models {
		if utf8.RuneCountInString(m) > maxModelLen {
			return "", MsgModelNameTooLong
		}
		if msg := modelText.Validate(m); msg != "" {
			return "", msg
		}
	}
	joined := strings.Join(models, ",")
	if msg := modelListText.Validate(joined); msg != "" {
		return "", msg
	}
	return joined, ""
}

// NormalizeGroups cleans a comma-separated group list; an empty list means
// the default group. Group names follow the rule of users' groups, since a
// user reaches a channel through a group name they share.
func NormalizeGroups(list string) (string, string) {
	groups := Split(list)
	if len(groups) == 0 {
		groups = []string{DefaultGroup}
	}
	for _, g := range groups {
		if msg := user.ValidateGroup(g); msg != "" {
			return "", msg
		}
	}
	joined := strings.Join(groups, ",")
	if len(joined) > maxGroupsLen {
		return "", MsgGroupsTooLong
	}
	return joined, ""
}

// NormalizeBaseURL trims raw, defaults it per provider type when empty and
// strips trailing slashes (request paths are appended to it). It must be an
// absolute http or https URL without query or fragment.
func NormalizeBaseURL(typ int, raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		raw = defaultBaseURLs[typ]
	}
	raw = strings.TrimRight(raw, "/")
	if raw == "" {
		if typ == TypeAzure {
			return "", MsgAzureBaseURL
		}
		return "", "" // Bedrock, Vertex: the region's endpoint
	}
	if msg := baseURLText.Validate(raw); msg != "" {
		return "", msg
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil, u.Scheme != "http" && u.Scheme != "https", u.Host == "",
		u.RawQuery != "", u.ForceQuery, u.Fragment != "", len(raw) > maxBaseURLLen:
		return "", MsgBaseURLInvalid
	}
	return raw, ""
}

// NormalizeModelMapping checks that text is empty or a JSON object mapping
// non-empty model names to non-empty model names, and returns it trimmed.
func NormalizeModelMapping(text string) (string, string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", ""
	}
	if msg := mappingText.Validate(text); msg != "" {
		return "", msg
	}
	if _, err := ParseModelMapping(text); err != nil {
		return "", MsgModelMappingInvalid
	}
	return text, ""
}

// MaxKeys bounds a channel's key pool: the channel test and the recheck
// call the upstream once per key.
const MaxKeys = 100

// NormalizeKey trims an upstream key (a pool: Keys) and checks that a
// column can hold it and that it holds at most MaxKeys keys; an empty
// result means "no key sent".
func NormalizeKey(key string) (string, string) {
	key = strings.TrimSpace(key)
	if msg := keyText.Validate(key); msg != "" {
		return key, msg
	}
	if len(Keys(key)) > MaxKeys {
		return key, MsgTooManyKeys
	}
	return key, ""
}

// CleanLastError makes a failure storable as the channel's last_error:
// valid UTF-8 without NUL or control characters (tab and newlines kept), at
// most 4 KiB, cut at a character.
func CleanLastError(msg string) string { return lastErrorText.Clean(msg) }

// errBadMapping is ParseModelMapping's answer to anything but an object of
// non-empty strings.
type errBadMapping struct{}

func (errBadMapping) Error() string { return "model mapping is not an object of non-empty strings" }

// ParseModelMapping decodes stored model-mapping text; empty text is an
// empty mapping. The relay uses it to rewrite the requested model name.
func ParseModelMapping(text string) (map[string]string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return map[string]string{}, nil
	}
	// Unmarshal accepts "null" into a map; only an object is a mapping.
	if !strings.HasPrefix(text, "{") {
		return nil, errBadMapping{}
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, errBadMapping{}
	}
	for k, v := range m {
		if strings.TrimSpace(k) == "" || strings.TrimSpace(v) == "" {
			return nil, errBadMapping{}
		}
	}
	return m, nil
}
