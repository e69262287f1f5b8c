package plan

import (
	"bytes"
	"encoding/json"
	"strings"
)

// ParseFeatures reads the features of a request: a string holds one item
// per line, an array one item per element; items are trimmed and empty ones
// dropped. null or absent (empty raw) is no items. Each item is single-line
// text of at most 200 characters, and there are at most MaxFeatures.
func ParseFeatures(raw json.RawMessage) ([]string, *Problem) {
	raw = bytes.TrimSpace(raw)
	var items []string
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return []string{}, nil
	case raw[0] == '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, problem(MsgFeaturesInvalid)
		}
		// \r\n and a lone \r end a line too.
		items = strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(s), "\n")
	case raw[0] == '[':
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, problem(MsgFeaturesInvalid)
		}
	default:
		return nil, problem(MsgFeaturesInvalid)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		it = strings.TrimSpace(it)
		if it == "" {
			continue
		}
		if msg := featureText.Validate(it); msg != "" {
			return nil, problem(msg)
		}
		out = append(out, it)
	}
	if len(out) > MaxFeatures {
		return nil, problem(MsgFeaturesTooMany)
	}
	return out, nil
}

// EncodeFeatures is the stored form of features: a JSON array.
func EncodeFeatures(items []string) string {
	if items == nil {
		items = []string{}
	}
	b, _ := json.Marshal(items) // a slice of strings always encodes
	return string(b)
}

// DecodeFeatures reads stored features; text that is not an array (never
// written by this code) reads as no items.
func DecodeFeatures(text string) []string {
	var items []string
	if err := json.Unmarshal([]byte(text), &items); err != nil || items == nil {
		return []string{}
	}
	return items
}
