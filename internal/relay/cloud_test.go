package relay_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
)

// Cloud channel types (issue 28 §2) through the real HTTP surface, against
// the fakecloud front doors that check credentials as Azure (api-key,
// api-version), Bedrock (SigV4 recomputed with the known secret) and Vertex
// (JWT grant verified with the account's public key) do.

const (
	bedrockClaude = "anthropic.claude-3-5-sonnet-20240620-v1:0"
	bedrockNova   = "amazon.nova-pro-v1:0"
	vertexClaude  = "claude-sonnet-4@20250514"
	vertexGemini  = "gemini-2.5-pro"
	azureModel    = "gpt-4o"
)

var awsCreds = fakecloud.AWSCredentials{AccessKeyID: "AKIAGATEWAYTEST00001", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCY"}

func bedrockKey(c fakecloud.AWSCredentials, region string) string {
	return c.AccessKeyID + "|" + c.SecretAccessKey + "|" + region
}

// cloudGateway is a gateway whose channel is of a cloud type, serving
// models (the first is the gateway's; the others get the same prices).
type cloudGateway struct {
	e  *apptest.Env
	g  *apptest.Gateway
	up *fakeupstream.Server
}

func newCloudGateway(t *testing.T, typ int, baseURL, key string, models ...string) *cloudGateway {
	t.Helper()
	e := apptest.New(t)
	return newCloudGatewayOn(t, e, nil, typ, baseURL, key, models...)
}

func newCloudGatewayOn(t *testing.T, e *apptest.Env, up *fakeupstream.Server, typ int, baseURL, key string, models ...string) *cloudGateway {
	t.Helper()
	g := e.NewGateway(apptest.GatewayConfig{ChannelType: typ, UpstreamURL: baseURL, UpstreamKey: key, Model: models[0]})
	if len(models) > 1 {
		g.UpdateChannel(g.ChannelID, map[string]any{"models": strings.Join(models, ",")})
		for _, m := range models[1:] {
			g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": m, "input_price": 2, "output_price": 8})
		}
	}
	return &cloudGateway{e: e, g: g, up: up}
}

// billedCall makes one call expected to succeed and be billed exactly
// 12 prompt and 8 completion tokens at 2 and 8 CNY per 1M: 88 quota.
func (c *cloudGateway) billedCall(t *testing.T, path string, body map[string]any, header ...string) *apptest.V1 {
	t.Helper()
	before, n := c.g.Accounts(), len(c.g.ConsumeLogs())
	r := c.e.Call(c.g.Key, "POST", path, body, header...)
	if r.Status != http.StatusOK {
		t.Fatalf("%s: %d %s", path, r.Status, r.Body)
	}
	l := checkBilled(t, c.g, before, n, tokenCost(2, 8, 0, 12, 8, 0, 1))
	if l.PromptTokens != 12 || l.CompletionTokens != 8 {
		t.Errorf("log tokens %d/%d, want 12/8 as the provider reported", l.PromptTokens, l.CompletionTokens)
	}
	return r
}

// checkChatAnswers runs chat JSON and stream for model and checks the
// answers and the billing.
func (c *cloudGateway) checkChat(t *testing.T, model string) {
	t.Helper()
	r := c.billedCall(t, "/v1/chat/completions", chatBody(model, "hi", false))
	var out struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	}
	r.JSON(t, &out)
	if out.Model != model || len(out.Choices) != 1 || out.Choices[0].Message.Content == "" ||
		out.Usage.PromptTokens != 12 || out.Usage.CompletionTokens != 8 {
		t.Errorf("chat answer %s", r.Body)
	}
	body := chatBody(model, "hi", true)
	body["stream_options"] = map[string]bool{"include_usage": true}
	r = c.billedCall(t, "/v1/chat/completions", body)
	s := string(r.Body)
	if !strings.Contains(s, `"prompt_tokens":12`) || !strings.HasSuffix(strings.TrimSpace(s), "data: [DONE]") {
		t.Errorf("chat stream %s", s)
	}
}

// claudeBody is an Anthropic Messages request with what a faithful
// passthrough must keep byte for byte: thinking with its signature,
// cache_control, tools.
func claudeBody(model string, stream bool) map[string]any {
	b := map[string]any{
		"model": model, "max_tokens": 1024,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": 512},
		"system":   []map[string]any{{"type": "text", "text": "be brief", "cache_control": map[string]string{"type": "ephemeral"}}},
		"tools": []map[string]any{{"name": "get_weather", "description": "weather of a city",
			"input_schema": map[string]any{"type": "object", "properties": map[string]any{"city": map[string]string{"type": "string"}}}}},
		"messages": []map[string]any{
			{"role": "user", "content": "weather in Paris?"},
			{"role": "assistant", "content": []map[string]any{
				{"type": "thinking", "thinking": "call the tool", "signature": "EqQBCkYIBRgCKkA+sig=="},
				{"type": "tool_use", "id": "toolu_01", "name": "get_weather", "input": map[string]string{"city": "Paris"}}}},
			{"role": "user", "content": []map[string]any{{"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"}}},
		},
	}
	if stream {
		b["stream"] = true
	}
	return b
}

// checkFaithful asserts that sent (the body the cloud received) holds
// every member of the client's body but model and stream with the same
// bytes, and anthropic_version as the provider wants it.
func checkFaithful(t *testing.T, client map[string]any, sent []byte, version string) {
	t.Helper()
	raw, _ := json.Marshal(client)
	var in, out map[string]json.RawMessage
	if err := json.Unmarshal(raw, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(sent, &out); err != nil {
		t.Fatalf("sent body %s: %v", sent, err)
	}
	for k, v := range in {
		if k == "model" || k == "stream" {
			continue
		}
		if !bytes.Equal(out[k], v) {
			t.Errorf("member %s sent as %s, client wrote %s", k, out[k], v)
		}
	}
	if string(out["anthropic_version"]) != `"`+version+`"` {
		t.Errorf("anthropic_version %s, want %s", out["anthropic_version"], version)
	}
}

// checkMessages runs /v1/messages JSON and stream for a Claude model and
// returns the bodies the cloud received.
func (c *cloudGateway) checkMessages(t *testing.T, model string) {
	t.Helper()
	r := c.billedCall(t, "/v1/messages", claudeBody(model, false), "anthropic-version", "2023-06-01")
	var msg struct {
		Type  string `json:"type"`
		Usage struct {
			InputTokens  int64 `json:"input_tokens"`
			OutputTokens int64 `json:"output_tokens"`
		} `json:"usage"`
	}
	r.JSON(t, &msg)
	if msg.Type != "message" || msg.Usage.InputTokens != 12 || msg.Usage.OutputTokens != 8 {
		t.Errorf("messages answer %s", r.Body)
	}
	r = c.billedCall(t, "/v1/messages", claudeBody(model, true), "anthropic-version", "2023-06-01")
	s := string(r.Body)
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(s, "event: message_start") || !strings.Contains(s, "event: message_stop") {
		t.Errorf("messages stream (%s): %s", r.Header.Get("Content-Type"), s)
	}
}

// checkKeyRefused calls through a channel whose credential the cloud
// refuses: the call fails, nobody is billed, and the channel is disabled
// as for a refused key (status 3).
func (c *cloudGateway) checkKeyRefused(t *testing.T, path string, body map[string]any) {
	t.Helper()
	before, n := c.g.Accounts(), len(c.g.ConsumeLogs())
	r := c.e.Call(c.g.Key, "POST", path, body)
	if r.Status == http.StatusOK {
		t.Fatalf("refused credential answered 200: %s", r.Body)
	}
	if after := c.g.Accounts(); after != before || len(c.g.ConsumeLogs()) != n {
		t.Errorf("refused call billed: %+v → %+v", before, after)
	}
	if st := c.g.ChannelState(c.g.ChannelID); st.Status != channel.StatusAutoDisabled {
		t.Errorf("channel status %d (%s), want %d: a refused key disables it", st.Status, st.LastError, channel.StatusAutoDisabled)
	}
}

func (c *cloudGateway) checkTestButton(t *testing.T, model string) {
	t.Helper()
	var res struct {
		StatusCode int    `json:"status_code"`
		Model      string `json:"model"`
	}
	c.g.Root.OK("GET", apptest.Path("/api/channel/test/%d?model=%s", c.g.ChannelID, model), nil).Decode(t, &res)
	if res.StatusCode != 200 || res.Model != model {
		t.Errorf("channel test %+v", res)
	}
}

func usageBackend(t *testing.T) *fakeupstream.Server {
	up := fakeupstream.New(t)
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 12, CompletionTokens: 8})
	return up
}

func TestAzureChannel(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	az := fakecloud.NewAzure(t, up, fakeupstream.DefaultKey, "azure-key-1", azureModel)
	c := newCloudGateway(t, channel.TypeAzure, az.URL, "azure-key-1", azureModel)
	c.checkChat(t, azureModel)
	last := az.LastRequest(t)
	if last.Header.Get("Api-Key") != "azure-key-1" || last.Header.Get("Authorization") != "" ||
		last.Path != "/openai/deployments/"+azureModel+"/chat/completions" || last.RawQuery != "api-version=2024-10-21" {
		t.Errorf("azure request %s?%s api-key %q authorization %q", last.Path, last.RawQuery,
			last.Header.Get("Api-Key"), last.Header.Get("Authorization"))
	}
	c.checkTestButton(t, azureModel)

	// v1: the model in the body, no api-version.
	c.g.UpdateChannel(c.g.ChannelID, map[string]any{"other": "v1"})
	c.billedCall(t, "/v1/chat/completions", chatBody(azureModel, "hi", false))
	if last := az.LastRequest(t); last.Path != "/openai/v1/chat/completions" || last.RawQuery != "" {
		t.Errorf("v1 request %s?%s", last.Path, last.RawQuery)
	}

	c.g.UpdateChannel(c.g.ChannelID, map[string]any{"other": "", "key": "wrong-key"})
	c.checkKeyRefused(t, "/v1/chat/completions", chatBody(azureModel, "hi", false))
}

func TestBedrockChannel(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	b := fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1")
	c := newCloudGateway(t, channel.TypeBedrock, b.URL, bedrockKey(awsCreds, "us-east-1"), bedrockClaude, bedrockNova)
	c.checkChat(t, bedrockClaude)
	if last := b.LastRequest(t); last.Path != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke-with-response-stream" {
		t.Errorf("claude stream sent to %s", last.Path)
	}
	c.checkChat(t, bedrockNova)
	if last := b.LastRequest(t); last.Path != "/model/amazon.nova-pro-v1%3A0/converse-stream" {
		t.Errorf("nova stream sent to %s", last.Path)
	}
	c.checkMessages(t, bedrockClaude)
	c.billedCall(t, "/v1/messages", claudeBody(bedrockClaude, false), "anthropic-beta", "interleaved-thinking-2025-05-14")
	last := b.LastRequest(t)
	checkFaithful(t, claudeBody(bedrockClaude, false), last.Body, "bedrock-2023-05-31")
	var sent map[string]json.RawMessage
	json.Unmarshal(last.Body, &sent)
	if _, ok := sent["model"]; ok || string(sent["anthropic_beta"]) != `["interleaved-thinking-2025-05-14"]` {
		t.Errorf("invoke body %s", last.Body)
	}
	c.checkTestButton(t, bedrockClaude)
	c.checkTestButton(t, bedrockNova)

	// count_tokens is counted locally: Bedrock has no Anthropic counting
	// route at the same place.
	before := len(b.Requests())
	if r := c.e.Call(c.g.Key, "POST", "/v1/messages/count_tokens", map[string]any{"model": bedrockClaude,
		"messages": []map[string]string{{"role": "user", "content": "hello there"}}}); r.Status != http.StatusOK ||
		!strings.Contains(string(r.Body), `"input_tokens":`) || len(b.Requests()) != before {
		t.Errorf("count_tokens: %d %s, %d requests reached Bedrock", r.Status, r.Body, len(b.Requests())-before)
	}

	wrong := awsCreds
	wrong.SecretAccessKey = "not-the-secret"
	c.g.UpdateChannel(c.g.ChannelID, map[string]any{"key": bedrockKey(wrong, "us-east-1")})
	c.checkKeyRefused(t, "/v1/messages", claudeBody(bedrockClaude, false))
}

func TestVertexChannel(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	tokens := fakecloud.NewGoogleTokens(t)
	sa := tokens.NewServiceAccount(t, "gateway", "proj-1")
	v := fakecloud.NewVertex(t, tokens, up, fakeupstream.DefaultKey, "us-east5")
	e := apptest.New(t)
	c := newCloudGatewayOn(t, e, up, channel.TypeVertex, v.URL, sa.JSON, vertexClaude, vertexGemini)
	c.g.UpdateChannel(c.g.ChannelID, map[string]any{"other": "us-east5"})
	c.checkChat(t, vertexGemini)
	if last := v.LastRequest(t); last.Path != "/v1/projects/proj-1/locations/us-east5/publishers/google/models/gemini-2.5-pro:streamGenerateContent" {
		t.Errorf("gemini stream sent to %s", last.Path)
	}
	c.checkChat(t, vertexClaude)
	c.checkMessages(t, vertexClaude)
	c.billedCall(t, "/v1/messages", claudeBody(vertexClaude, false))
	last := v.LastRequest(t)
	checkFaithful(t, claudeBody(vertexClaude, false), last.Body, "vertex-2023-10-16")
	if !strings.HasSuffix(last.Path, "/publishers/anthropic/models/"+vertexClaude+":rawPredict") {
		t.Errorf("claude sent to %s", last.Path)
	}
	c.checkTestButton(t, vertexGemini)
	if _, n := tokens.Grants(sa.Email); n != 1 {
		t.Errorf("%d grants for %d calls, want 1: the token is reused until it expires", n, len(v.Requests()))
	}

	tokens.Disable(sa.Email)
	other := tokens.NewServiceAccount(t, "disabled", "proj-1")
	tokens.Disable(other.Email)
	c.g.UpdateChannel(c.g.ChannelID, map[string]any{"key": other.JSON})
	c.checkKeyRefused(t, "/v1/chat/completions", chatBody(vertexGemini, "hi", false))
}

func TestCloudChannelFields(t *testing.T) {
	apptest.Parallel(t)
	e := apptest.New(t)
	root := e.Root()
	tokens := fakecloud.NewGoogleTokens(t)
	sa := tokens.NewServiceAccount(t, "fields", "proj-2")
	create := func(typ int, baseURL, key, other string) *apptest.Response {
		return root.Do("POST", "/api/channel/", map[string]any{"type": typ, "name": "c", "key": key,
			"base_url": baseURL, "models": "m", "other": other})
	}
	for _, tc := range []struct {
		name                string
		typ                 int
		baseURL, key, other string
		msg                 string
		wantOther, wantBase string
	}{
		{"azure default version", channel.TypeAzure, "https://r.openai.azure.com/", "k", "", "", "2024-10-21", "https://r.openai.azure.com"},
		{"azure preview", channel.TypeAzure, "https://r.openai.azure.com", "k", "2025-03-01-preview", "", "2025-03-01-preview", ""},
		{"azure v1", channel.TypeAzure, "https://r.openai.azure.com", "k", "v1", "", "v1", ""},
		{"azure bad date", channel.TypeAzure, "https://r.openai.azure.com", "k", "2024-02-30", channel.MsgAzureAPIVersion, "", ""},
		{"azure V1 upper", channel.TypeAzure, "https://r.openai.azure.com", "k", "V1", channel.MsgAzureAPIVersion, "", ""},
		{"azure no endpoint", channel.TypeAzure, "", "k", "", channel.MsgAzureBaseURL, "", ""},
		{"bedrock", channel.TypeBedrock, "", "AKIAGATEWAYTEST00001|secret|us-east-1", "", "", "", ""},
		{"bedrock token", channel.TypeBedrock, "", "AKIAGATEWAYTEST00001|secret|us-east-1|FwoGZXIvYXdzEJr", "", "", "", ""},
		{"bedrock two parts", channel.TypeBedrock, "", "AKIAGATEWAYTEST00001|secret", "", channel.MsgBedrockKey, "", ""},
		{"bedrock bad region", channel.TypeBedrock, "", "AKIAGATEWAYTEST00001|secret|Mars", "", channel.MsgBedrockKey, "", ""},
		{"bedrock space in secret", channel.TypeBedrock, "", "AKIAGATEWAYTEST00001|se cret|us-east-1", "", channel.MsgBedrockKey, "", ""},
		{"vertex default region", channel.TypeVertex, "", sa.JSON, "", "", "us-central1", ""},
		{"vertex region", channel.TypeVertex, "", sa.JSON, "europe-west4", "", "europe-west4", ""},
		{"vertex bad region", channel.TypeVertex, "", sa.JSON, "evil.com/x", channel.MsgVertexRegion, "", ""},
		{"vertex not json", channel.TypeVertex, "", "sk-abc", "", channel.MsgVertexKey, "", ""},
		{"vertex two keys of one project", channel.TypeVertex, "", sa.JSON + "\n" + sa.JSON, "", "", "us-central1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := create(tc.typ, tc.baseURL, tc.key, tc.other)
			var data struct {
				Other   string `json:"other"`
				BaseURL string `json:"base_url"`
				HasKey  bool   `json:"has_key"`
				Key     string `json:"key"`
			}
			if r.Success {
				r.Decode(t, &data)
			}
			if tc.msg != "" {
				if r.Success || r.Message != tc.msg {
					t.Errorf("got success=%v %q, want %q", r.Success, r.Message, tc.msg)
				}
				if strings.Contains(string(r.Raw), "secret") || strings.Contains(string(r.Raw), "PRIVATE") {
					t.Errorf("answer quotes the key: %s", r.Raw)
				}
				return
			}
			if !r.Success || data.Other != tc.wantOther || !data.HasKey || data.Key != "" {
				t.Errorf("created %s", r.Raw)
			}
			if tc.wantBase != "" && data.BaseURL != tc.wantBase {
				t.Errorf("base_url %q, want %q", data.BaseURL, tc.wantBase)
			}
		})
	}
	// A type change is checked against the stored key.
	var ch struct {
		ID int64 `json:"id"`
	}
	create(channel.TypeOpenAI, "", "sk-plain", "").Decode(t, &ch)
	root.Fail("PUT", "/api/channel/", map[string]any{"id": ch.ID, "type": channel.TypeBedrock}, http.StatusOK, channel.MsgBedrockKey)
}

// TestCloudBillingCacheAndTiers is TestBillingCacheAndTiers for the cloud
// types: the balance moves by exactly the cost computed by hand from what
// the provider reported (cache reads, 5-minute and 1-hour writes where the
// provider reports them), at the prices of the prompt's tier.
func TestCloudBillingCacheAndTiers(t *testing.T) {
	apptest.Parallel(t)
	below := fakeupstream.Behavior{PromptTokens: 900, CachedTokens: 400, CacheWriteTokens: 200, CacheWrite1hTokens: 100, CompletionTokens: 50}
	above := fakeupstream.Behavior{PromptTokens: 1500, CachedTokens: 600, CacheWriteTokens: 300, CacheWrite1hTokens: 200, CompletionTokens: 100}
	messages := func(model string, stream bool) map[string]any {
		return map[string]any{"model": model, "max_tokens": 100, "stream": stream, "messages": []map[string]string{{"role": "user", "content": "hi"}}}
	}
	chat := func(model string, stream bool) map[string]any { return chatBody(model, "hi", stream) }
	type door struct{ url, key string }
	for _, tc := range []struct {
		name  string
		typ   int
		model string
		path  string
		body  func(model string, stream bool) map[string]any
		// writes: 0 none reported; 1 5-minute and 1-hour apart; 2 one
		// figure (Converse's cacheWriteInputTokens), billed at the
		// 5-minute write price.
		writes int
		front  func(t *testing.T, up *fakeupstream.Server) door
	}{
		{"azure chat", channel.TypeAzure, azureModel, "/v1/chat/completions", chat, 0, func(t *testing.T, up *fakeupstream.Server) door {
			return door{fakecloud.NewAzure(t, up, fakeupstream.DefaultKey, "k", azureModel).URL, "k"}
		}},
		{"bedrock claude messages", channel.TypeBedrock, bedrockClaude, "/v1/messages", messages, 1, func(t *testing.T, up *fakeupstream.Server) door {
			return door{fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1").URL, bedrockKey(awsCreds, "us-east-1")}
		}},
		{"bedrock claude chat", channel.TypeBedrock, bedrockClaude, "/v1/chat/completions", chat, 1, func(t *testing.T, up *fakeupstream.Server) door {
			return door{fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1").URL, bedrockKey(awsCreds, "us-east-1")}
		}},
		{"bedrock converse chat", channel.TypeBedrock, bedrockNova, "/v1/chat/completions", chat, 2, func(t *testing.T, up *fakeupstream.Server) door {
			return door{fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1").URL, bedrockKey(awsCreds, "us-east-1")}
		}},
		{"vertex claude messages", channel.TypeVertex, vertexClaude, "/v1/messages", messages, 1, func(t *testing.T, up *fakeupstream.Server) door {
			tokens := fakecloud.NewGoogleTokens(t)
			sa := tokens.NewServiceAccount(t, "billing", "proj-1")
			return door{fakecloud.NewVertex(t, tokens, up, fakeupstream.DefaultKey, "us-central1").URL, sa.JSON}
		}},
		{"vertex gemini chat", channel.TypeVertex, vertexGemini, "/v1/chat/completions", chat, 0, func(t *testing.T, up *fakeupstream.Server) door {
			tokens := fakecloud.NewGoogleTokens(t)
			sa := tokens.NewServiceAccount(t, "billing", "proj-1")
			return door{fakecloud.NewVertex(t, tokens, up, fakeupstream.DefaultKey, "us-central1").URL, sa.JSON}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			d := tc.front(t, up)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: d.url, UpstreamKey: d.key, ChannelType: tc.typ, Model: tc.model,
				InputPrice: 3, OutputPrice: 15})
			update := map[string]any{"id": g.ModelPriceID(t, tc.model)}
			for k, v := range cachePrices {
				update[k] = v
			}
			g.Root.OK("PUT", "/api/model_price/", update)
			for _, c := range []struct {
				b                    fakeupstream.Behavior
				writes, noWrit, oneW int64
			}{
				// oneW: 200×3 + 400×0.3 + 300×3.75 + 50×15; above: 400×6 + 600×0.6 + 500×7.5 + 100×22.5.
				{below, 2820, 2370, 2595},
				{above, 9660, 8010, 8760},
			} {
				up.SetBehavior(c.b)
				want, wantWrite, wantWrite1h := c.noWrit, int64(0), int64(0)
				switch tc.writes {
				case 1:
					want, wantWrite, wantWrite1h = c.writes, c.b.CacheWriteTokens, c.b.CacheWrite1hTokens
				case 2:
					want, wantWrite = c.oneW, c.b.CacheWriteTokens+c.b.CacheWrite1hTokens
				}
				for _, stream := range []bool{false, true} {
					before, n := g.Accounts(), len(g.ConsumeLogs())
					r := e.Call(g.Key, "POST", tc.path, tc.body(tc.model, stream), "anthropic-version", "2023-06-01")
					if r.Status != http.StatusOK {
						t.Fatalf("prompt %d, stream %v: %d %s", c.b.PromptTokens, stream, r.Status, r.Body)
					}
					l := checkBilled(t, g, before, n, want)
					if l.PromptTokens != c.b.PromptTokens || l.CachedTokens != c.b.CachedTokens || l.CompletionTokens != c.b.CompletionTokens ||
						l.CacheWriteTokens != wantWrite || l.CacheWrite1hTokens != wantWrite1h {
						t.Errorf("prompt %d, stream %v: log tokens %+v", c.b.PromptTokens, stream, l)
					}
				}
			}
		})
	}
}

// TestVertexParallelFirstCalls: concurrent first calls of a Vertex channel
// share one token grant, and each is billed exactly once.
func TestVertexParallelFirstCalls(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	tokens := fakecloud.NewGoogleTokens(t)
	sa := tokens.NewServiceAccount(t, "parallel", "proj-1")
	v := fakecloud.NewVertex(t, tokens, up, fakeupstream.DefaultKey, "us-central1")
	c := newCloudGateway(t, channel.TypeVertex, v.URL, sa.JSON, vertexGemini)
	c.g.SetQuota(1_000_000_000) // every call's hold at once
	before, n := c.g.Accounts(), len(c.g.ConsumeLogs())
	const calls = 100
	var wg sync.WaitGroup
	failed := make(chan string, calls)
	for range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := c.e.Call(c.g.Key, "POST", "/v1/chat/completions", chatBody(vertexGemini, "hi", false)); r.Status != http.StatusOK {
				failed <- string(r.Body)
			}
		}()
	}
	wg.Wait()
	close(failed)
	for f := range failed {
		t.Fatalf("a parallel call failed: %s", f)
	}
	if _, grants := tokens.Grants(sa.Email); grants != 1 {
		t.Errorf("%d grants for %d concurrent first calls, want 1", grants, calls)
	}
	after := c.g.Accounts()
	if got, want := before.Quota-after.Quota, calls*tokenCost(2, 8, 0, 12, 8, 0, 1); got != want || len(c.g.ConsumeLogs()) != n+calls {
		t.Errorf("balance fell by %d over %d logs, want %d over %d", got, len(c.g.ConsumeLogs())-n, want, calls)
	}
}

// TestBedrockStreamException: an exception frame after the 200 (how
// Bedrock reports throttling mid-stream) ends the client's stream with an
// error, never a clean end, on the passthrough and the converted path.
func TestBedrockStreamException(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	b := fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1")
	c := newCloudGateway(t, channel.TypeBedrock, b.URL, bedrockKey(awsCreds, "us-east-1"), bedrockClaude, bedrockNova)
	b.SetStreamException("throttlingException")
	r := c.e.Call(c.g.Key, "POST", "/v1/messages", claudeBody(bedrockClaude, true), "anthropic-version", "2023-06-01")
	if s := string(r.Body); r.Status != http.StatusOK || !strings.Contains(s, "event: message_start") ||
		!strings.Contains(s, "event: error") || strings.Contains(s, "message_stop") {
		t.Errorf("messages stream with an exception: %d %s", r.Status, s)
	}
	for _, model := range []string{bedrockClaude, bedrockNova} {
		r = c.e.Call(c.g.Key, "POST", "/v1/chat/completions", chatBody(model, "hi", true))
		if s := string(r.Body); r.Status != http.StatusOK || !strings.Contains(s, `"error"`) || strings.Contains(s, "[DONE]") {
			t.Errorf("%s chat stream with an exception: %d %s", model, r.Status, s)
		}
	}
	if st := c.g.ChannelState(c.g.ChannelID); st.Status != channel.StatusEnabled {
		t.Errorf("a throttled stream changed the channel to status %d", st.Status)
	}
}

// TestAzureNativeRoutes: embeddings at the deployment's URL, Responses at
// the resource's with the deployment as model, on a dated api-version.
func TestAzureNativeRoutes(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	az := fakecloud.NewAzure(t, up, fakeupstream.DefaultKey, "azure-key-1", "my-deployment")
	c := newCloudGateway(t, channel.TypeAzure, az.URL, "azure-key-1", azureModel)
	c.g.UpdateChannel(c.g.ChannelID, map[string]any{"other": "2025-03-01-preview", "model_mapping": `{"gpt-4o":"my-deployment"}`})
	c.billedCall(t, "/v1/responses", map[string]any{"model": azureModel, "input": "hi"})
	last := az.LastRequest(t)
	if last.Path != "/openai/responses" || last.RawQuery != "api-version=2025-03-01-preview" || !strings.Contains(string(last.Body), `"model":"my-deployment"`) {
		t.Errorf("responses sent to %s?%s: %s", last.Path, last.RawQuery, last.Body)
	}
	r := c.e.Call(c.g.Key, "POST", "/v1/embeddings", map[string]any{"model": azureModel, "input": "hi"})
	last = az.LastRequest(t)
	if r.Status != http.StatusOK || last.Path != "/openai/deployments/my-deployment/embeddings" || last.RawQuery != "api-version=2025-03-01-preview" {
		t.Errorf("embeddings: %d %s, sent to %s?%s", r.Status, r.Body, last.Path, last.RawQuery)
	}
}

// TestBedrockKeyPool: a Bedrock channel's pool signs each attempt with
// its own key; a key refused by AWS is retired alone, the call retried on
// the other and billed once; keys of another region are refused at save.
func TestBedrockKeyPool(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	b := fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1")
	// Another key id: AWS's signer caches signing keys by key id, and no
	// two AWS keys share one.
	wrong := fakecloud.AWSCredentials{AccessKeyID: "AKIAGATEWAYTEST00002", SecretAccessKey: "not-the-secret"}
	pool := bedrockKey(wrong, "us-east-1") + "\n" + bedrockKey(awsCreds, "us-east-1")
	c := newCloudGateway(t, channel.TypeBedrock, b.URL, pool, bedrockNova)
	for range 4 {
		c.billedCall(t, "/v1/chat/completions", map[string]any{"model": bedrockNova,
			"messages": []map[string]string{{"role": "user", "content": "hi"}}})
	}
	var view struct {
		Status       int `json:"status"`
		KeyCount     int `json:"key_count"`
		DisabledKeys []struct {
			Index int `json:"index"`
		} `json:"disabled_keys"`
	}
	c.g.Root.OK("GET", apptest.Path("/api/channel/%d", c.g.ChannelID), nil).Decode(t, &view)
	if view.Status != channel.StatusEnabled || view.KeyCount != 2 || len(view.DisabledKeys) != 1 || view.DisabledKeys[0].Index != 0 {
		t.Errorf("channel view %+v: want enabled, key 0 of 2 retired", view)
	}

	other := bedrockKey(awsCreds, "us-east-1") + "\n" + bedrockKey(awsCreds, "eu-west-1")
	c.g.Root.Fail("PUT", "/api/channel/", map[string]any{"id": c.g.ChannelID, "key": other}, http.StatusOK, channel.MsgPoolKeysApart)
}

// checkResponses sends a tool-using Responses call to model, JSON and
// stream: converted through chat, it answers the function call with its
// call_id and bills the provider's usage exactly.
func (c *cloudGateway) checkResponses(t *testing.T, up *fakeupstream.Server, model string) {
	t.Helper()
	up.SetBehavior(fakeupstream.Behavior{PromptTokens: 12, CompletionTokens: 8,
		ToolCall: &fakeupstream.ToolCall{Name: "get_weather", Arguments: `{"city":"Lisbon"}`}})
	defer up.SetBehavior(fakeupstream.Behavior{PromptTokens: 12, CompletionTokens: 8})
	var tool map[string]any
	json.Unmarshal([]byte(weatherTool), &tool)
	for _, stream := range []bool{false, true} {
		r := c.billedCall(t, "/v1/responses", map[string]any{"model": model, "stream": stream,
			"tools": []any{tool}, "input": "Weather in Lisbon?"})
		var resp respObject
		if stream {
			evs := readEvents(t, r.Body)
			if len(evs) == 0 || evs[len(evs)-1].Type != "response.completed" {
				t.Fatalf("%s stream ends %v", model, types(evs))
			}
			resp = *evs[len(evs)-1].Response
		} else {
			r.JSON(t, &resp)
		}
		if resp.Status != "completed" || len(resp.Output) != 1 || resp.Output[0].Type != "function_call" ||
			resp.Output[0].CallID == "" || resp.Output[0].Arguments != `{"city":"Lisbon"}` {
			t.Errorf("%s (stream %v) response %+v", model, stream, resp)
		}
	}
}

// TestResponsesOnCloudChannels: /v1/responses on Bedrock (Converse and
// Claude) and Vertex (Gemini and Claude) is converted through chat.
func TestResponsesOnCloudChannels(t *testing.T) {
	apptest.Parallel(t)
	up := usageBackend(t)
	b := fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1")
	cb := newCloudGatewayOn(t, apptest.New(t), up, channel.TypeBedrock, b.URL, bedrockKey(awsCreds, "us-east-1"), bedrockNova, bedrockClaude)
	cb.checkResponses(t, up, bedrockNova)
	cb.checkResponses(t, up, bedrockClaude)

	vup := usageBackend(t)
	tokens := fakecloud.NewGoogleTokens(t)
	sa := tokens.NewServiceAccount(t, "gateway", "proj-1")
	v := fakecloud.NewVertex(t, tokens, vup, fakeupstream.DefaultKey, "us-central1")
	cv := newCloudGatewayOn(t, apptest.New(t), vup, channel.TypeVertex, v.URL, sa.JSON, vertexGemini, vertexClaude)
	cv.checkResponses(t, vup, vertexGemini)
	cv.checkResponses(t, vup, vertexClaude)
}
