package channel

import (
	"strings"

	"github.com/modelgate/modelgate/internal/relay/azure"
	"github.com/modelgate/modelgate/internal/relay/bedrock"
	"github.com/modelgate/modelgate/internal/relay/vertex"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Messages of the cloud types' own fields (docs/providers.md). None quotes
// the key: a refused credential is never echoed.
const (
	MsgAzureBaseURL    = "Azure OpenAI 渠道必须填写 Base URL (资源终结点,如 https://NAME.openai.azure.com)"
	MsgAzureAPIVersion = "api-version 无效,应为 2024-10-21、2025-03-01-preview 这样的日期或 v1"
	MsgVertexRegion    = "Vertex AI 区域无效,应为 us-central1 这样的区域名或 global"
	MsgBedrockKey      = "AWS Bedrock 密钥格式应为 ACCESS_KEY_ID|SECRET_ACCESS_KEY|REGION[|SESSION_TOKEN]"
	MsgVertexKey       = "Vertex AI 密钥应为服务账号的 JSON 密钥 (type 为 service_account,含 project_id、client_email 和 RSA 私钥)"
	MsgPoolKeysApart   = "同一渠道的多个密钥必须属于同一区域 (AWS Bedrock) 或同一项目 (Vertex AI);不同的请建多个渠道"
)

// otherText is the "other" field of the types that keep none of their own:
// stored as sent (one-api exports carry it), one line.
var otherText = textfield.Field{Label: "other", MaxChars: 512}

// NormalizeOther validates the type's own setting: Azure's api-version
// (empty: azure.DefaultAPIVersion), Vertex's region (empty:
// vertex.DefaultRegion). The default is stored, so the channel view shows
// what is used.
func NormalizeOther(typ int, other string) (string, string) {
	other = strings.TrimSpace(other)
	switch typ {
	case TypeAzure:
		v, err := azure.ParseAPIVersion(other)
		if err != nil {
			return "", MsgAzureAPIVersion
		}
		return v, ""
	case TypeVertex:
		r, err := vertex.ParseRegion(other)
		if err != nil {
			return "", MsgVertexRegion
		}
		return r, ""
	}
	return other, otherText.Validate(other)
}

// CheckKey validates a channel's key text (already NormalizeKey'd) for its
// type: each key of its pool (Keys) is Bedrock's
// ACCESS_KEY_ID|SECRET|REGION[|TOKEN] or Vertex's service-account JSON
// (one key, however many lines), and the keys of one pool share the
// endpoint the channel is bound to: one region (Bedrock), one project
// (Vertex). Other types' keys are opaque.
func CheckKey(typ int, key string) string {
	if key == "" {
		return ""
	}
	endpoint := ""
	for i, k := range Keys(key) {
		var at string
		switch typ {
		case TypeBedrock:
			c, err := bedrock.ParseKey(k)
			if err != nil {
				return MsgBedrockKey
			}
			at = c.Region
		case TypeVertex:
			sa, err := vertex.ParseKey(k)
			if err != nil {
				return MsgVertexKey
			}
			at = sa.ProjectID
		default:
			return ""
		}
		if i > 0 && at != endpoint {
			return MsgPoolKeysApart
		}
		endpoint = at
	}
	return ""
}
