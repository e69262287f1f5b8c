package importer

import "strings"

// defaultRatios are one-api's built-in model ratios (v0.6.10,
// relay/billing/ratio/model.go), which apply there to every model its
// ModelRatio option does not list. Ratio 1 = 0.002 USD per 1K prompt tokens.
// Only the models operators route today are kept; a model a channel lists
// without a ratio here or in the source is reported as without a price.
var defaultRatios = map[string]float64{
	"gpt-4": 15, "gpt-4-0613": 15, "gpt-4-32k": 30, "gpt-4-1106-preview": 5, "gpt-4-0125-preview": 5,
	"gpt-4-turbo-preview": 5, "gpt-4-turbo": 5, "gpt-4-turbo-2024-04-09": 5, "gpt-4o": 2.5,
	"chatgpt-4o-latest": 2.5, "gpt-4o-2024-05-13": 2.5, "gpt-4o-2024-08-06": 1.25, "gpt-4o-mini": 0.075,
	"gpt-4o-mini-2024-07-18": 0.075, "gpt-3.5-turbo": 0.25, "gpt-3.5-turbo-0125": 0.25,
	"gpt-3.5-turbo-1106": 0.5, "gpt-3.5-turbo-16k": 1.5, "gpt-3.5-turbo-instruct": 0.75,
	"text-embedding-ada-002": 0.05, "text-embedding-3-small": 0.01, "text-embedding-3-large": 0.065,
	"claude-instant-1.2": 0.4, "claude-2.0": 4, "claude-2.1": 4, "claude-3-haiku-20240307": 0.125,
	"claude-3-5-haiku-20241022": 0.5, "claude-3-sonnet-20240229": 1.5, "claude-3-5-sonnet-20240620": 1.5,
	"claude-3-5-sonnet-20241022": 1.5, "claude-3-opus-20240229": 7.5,
	"gemini-pro": 1, "gemini-1.0-pro": 1, "gemini-1.5-flash": 1, "gemini-1.5-pro": 1,
	"moonshot-v1-8k": 0.012 * 500 / 7, "moonshot-v1-32k": 0.024 * 500 / 7, "moonshot-v1-128k": 0.06 * 500 / 7,
	"open-mistral-7b": 0.125, "open-mixtral-8x7b": 0.35, "mistral-small-latest": 1, "mistral-medium-latest": 1.35,
	"mistral-large-latest": 4, "mistral-embed": 0.05,
	"deepseek-chat": 1.0 / 1000 * 500 / 7, "deepseek-coder": 1.0 / 1000 * 500 / 7,
	"qwen-turbo": 1.4286, "qwen-plus": 1.4286, "qwen-max": 1.4286, "grok-beta": 2.5,
}

// defaultCompletionRatio is one-api's completion ratio for a model its
// CompletionRatio option does not list (v0.6.10: GetCompletionRatio).
func defaultCompletionRatio(name string) float64 {
	switch {
	case strings.HasPrefix(name, "gpt-3.5"):
		if name == "gpt-3.5-turbo" || strings.HasSuffix(name, "0125") {
			return 3
		}
		if strings.HasSuffix(name, "1106") {
			return 2
		}
		return 4.0 / 3.0
	case strings.HasPrefix(name, "gpt-4"):
		if strings.HasPrefix(name, "gpt-4o-mini") || name == "gpt-4o-2024-08-06" {
			return 4
		}
		if strings.HasPrefix(name, "gpt-4-turbo") || strings.HasPrefix(name, "gpt-4o") || strings.HasSuffix(name, "preview") {
			return 3
		}
		return 2
	case name == "chatgpt-4o-latest":
		return 3
	case strings.HasPrefix(name, "claude-3"):
		return 5
	case strings.HasPrefix(name, "claude-"), strings.HasPrefix(name, "mistral-"), strings.HasPrefix(name, "gemini-"):
		return 3
	case strings.HasPrefix(name, "deepseek-"):
		return 2
	case name == "grok-beta":
		return 3
	}
	return 1
}
