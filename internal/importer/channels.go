package importer

import "github.com/modelgate/modelgate/internal/channel"

// Systems this package reads.
const (
	OneAPI = "one-api"
	NewAPI = "new-api"
)

// Channel types of modelgate that come with the cloud providers (Azure,
// AWS Bedrock, Vertex AI). They use one-api's and new-api's numbers.
const (
	typeAzure   = 3
	typeBedrock = 33
	typeVertex  = 41
)

// target is what a source channel type becomes here.
type target struct {
	Type int
	// BaseURL replaces an empty source base URL: the upstream's OpenAI
	// dialect root, to which modelgate appends /v1/chat/completions.
	BaseURL string
	// Reason, when set, imports the channel disabled and says why.
	Reason string
}

// Native types: the same number here, with the source's own base URL.
var native = map[int]bool{channel.TypeOpenAI: true, channel.TypeAnthropic: true, channel.TypeGemini: true}

// openAIDialect lists, per system, the channel types whose upstream speaks
// the OpenAI dialect under <base>/v1/…, with their default base URL (the
// source's own default, or the provider's OpenAI-compatible root where the
// source used a native API, such as Qwen's compatible mode).
var openAIDialect = map[string]map[int]string{
	OneAPI: {
		2: "https://oa.api2d.net", 4: "https://api.closeai-proxy.xyz", 5: "https://api.openai-sb.com",
		6: "https://api.openaimax.com", 7: "https://api.ohmygpt.com", 8: "", 9: "https://api.caipacity.com",
		10: "https://api.aiproxy.io", 12: "https://api.api2gpt.com", 13: "https://api.aigc2d.com",
		17: "https://dashscope.aliyuncs.com/compatible-mode", 20: "https://openrouter.ai/api",
		25: "https://api.moonshot.cn", 28: "https://api.mistral.ai", 29: "https://api.groq.com/openai",
		30: "http://localhost:11434", 31: "https://api.lingyiwanwu.com", 32: "https://api.stepfun.com",
		36: "https://api.deepseek.com", 39: "https://api.together.xyz",
		44: "https://api.siliconflow.cn", 45: "https://api.x.ai",
		49: "https://dashscope.aliyuncs.com/compatible-mode", 50: "",
	},
	NewAPI: {
		4: "http://localhost:11434", 6: "https://api.openaimax.com", 7: "https://api.ohmygpt.com", 8: "",
		9: "https://api.caipacity.com", 10: "https://api.aiproxy.io", 12: "https://api.api2gpt.com",
		13: "https://api.aigc2d.com", 17: "https://dashscope.aliyuncs.com/compatible-mode",
		20: "https://openrouter.ai/api", 25: "https://api.moonshot.cn", 31: "https://api.lingyiwanwu.com",
		40: "https://api.siliconflow.cn", 42: "https://api.mistral.ai", 43: "https://api.deepseek.com",
		47: "", 48: "https://api.x.ai",
	},
}

// cloud maps each system's cloud types to modelgate's: one-api numbers
// Vertex AI 42 (its 41 is Novita), new-api 41.
var cloud = map[string]map[int]int{
	OneAPI: {3: typeAzure, 33: typeBedrock, 42: typeVertex},
	NewAPI: {3: typeAzure, 33: typeBedrock, 41: typeVertex},
}

// mapChannelType says what a source channel of type t becomes.
func mapChannelType(system string, t int) target {
	if native[t] {
		return target{Type: t}
	}
	if mg, ok := cloud[system][t]; ok {
		// The one place to flip once the provider types land: when the
		// channel rules accept the type, the channel comes over as it was;
		// until then it comes over disabled, with its key, so the admin
		// enables it after the upgrade.
		if channel.ValidType(mg) {
			return target{Type: mg}
		}
		return target{Type: mg, Reason: "channel type not yet supported by this modelgate version; imported disabled"}
	}
	if base, ok := openAIDialect[system][t]; ok {
		return target{Type: channel.TypeOpenAI, BaseURL: base}
	}
	return target{Type: channel.TypeOpenAI, Reason: "upstream does not speak the OpenAI dialect under <base>/v1; imported disabled as type 1"}
}
