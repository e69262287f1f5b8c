package bedrock

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelgate/modelgate/internal/relay/jsonbody"
)

// AnthropicVersion is the anthropic_version Bedrock's Claude models take in
// the body, in place of the anthropic-version header.
const AnthropicVersion = "bedrock-2023-05-31"

// profilePrefixes are the geography prefixes of cross-region inference
// profiles ("us.anthropic.claude-…", "global.anthropic.claude-…").
var profilePrefixes = []string{"us.", "eu.", "apac.", "global.", "us-gov.", "jp.", "au.", "ca."}

// IsAnthropic reports whether a model id (or inference profile id, or an
// ARN naming either) is a Claude model, which takes the Messages body
// through InvokeModel; every other model goes through Converse.
func IsAnthropic(modelID string) bool {
	id := modelID
	if i := strings.LastIndexByte(id, '/'); i >= 0 && strings.HasPrefix(id, "arn:") {
		id = id[i+1:]
	}
	for _, p := range profilePrefixes {
		if strings.HasPrefix(id, p) {
			id = id[len(p):]
			break
		}
	}
	return strings.HasPrefix(id, "anthropic.")
}

// MessagesBody turns an Anthropic Messages API body into Bedrock's
// InvokeModel body: without "model" (the path names it) and "stream" (the
// operation decides), which Bedrock refuses, with anthropic_version, and
// with the client's anthropic-beta header values as "anthropic_beta", the
// form Bedrock reads them in. Every other member keeps its bytes, so
// thinking blocks, signatures, cache_control and tools pass unchanged.
func MessagesBody(body []byte, betas []string) ([]byte, error) {
	set := []jsonbody.Member{{Name: "anthropic_version", Value: jsonbody.String(AnthropicVersion)}}
	if len(betas) > 0 {
		var list []string
		for _, b := range betas {
			for _, v := range strings.Split(b, ",") {
				if v = strings.TrimSpace(v); v != "" {
					list = append(list, v)
				}
			}
		}
		if len(list) > 0 {
			raw, _ := json.Marshal(list)
			set = append(set, jsonbody.Member{Name: "anthropic_beta", Value: raw})
		}
	}
	out, err := jsonbody.Rewrite(body, []string{"model", "stream"}, set...)
	if err != nil {
		return nil, fmt.Errorf("bedrock messages body: %w", err)
	}
	return out, nil
}
