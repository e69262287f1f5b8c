package relay

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/pricing"
	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/gemini"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

// The usage fixtures below are hand-written in each API's documented
// format (issue 13 §3): what a real answer carries, extra fields included,
// so the readers are tested against the shapes, not against our own
// encoders.

// TestUsageOpenAI reads OpenAI chat and Responses usage as the passthrough
// reads it (usageFromJSON, usageFromEvent) and as a conversion reads it
// (decodeChatAnswer, the chunk source): prompt_tokens and input_tokens
// include the cached tokens.
func TestUsageOpenAI(t *testing.T) {
	t.Parallel()
	chat := `{"id":"chatcmpl-abc","object":"chat.completion","created":1741569952,"model":"gpt-4.1-2025-04-14",
"choices":[{"index":0,"message":{"role":"assistant","content":"Hi","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],
"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},
"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}},
"service_tier":"default","system_fingerprint":"fp_1"}`
	chatWant := pricing.Usage{PromptTokens: 2006, CompletionTokens: 300, CachedTokens: 1920}
	chatStream := `data: {"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-abc","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}

data: [DONE]

`
	responses := `{"id":"resp_67cc","object":"response","created_at":1741476542,"status":"completed","model":"gpt-4.1",
"output":[{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hi","annotations":[]}]}],
"usage":{"input_tokens":328,"input_tokens_details":{"cached_tokens":256},"output_tokens":52,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":380}}`
	responsesWant := pricing.Usage{PromptTokens: 328, CompletionTokens: 52, CachedTokens: 256}

	if got, ok := usageFromJSON(usageChat, []byte(chat)); !ok || got != chatWant {
		t.Errorf("chat JSON: %+v %v, want %+v", got, ok, chatWant)
	}
	_, u, err := decodeChatAnswer(openai.Dialect{}, []byte(chat), "m", "id")
	if got := billedUsage(u); err != nil || got != chatWant {
		t.Errorf("chat JSON converted: %+v %v, want %+v", got, err, chatWant)
	}
	var last pricing.Usage
	for _, ev := range events(t, chatStream) {
		if u, ok := usageFromEvent(usageChat, ev); ok {
			last = u
		}
	}
	if last != chatWant {
		t.Errorf("chat stream: %+v, want %+v", last, chatWant)
	}
	if got := sourceUsage(t, openai.Dialect{}, chatStream); got != chatWant {
		t.Errorf("chat stream converted: %+v, want %+v", got, chatWant)
	}
	if got, ok := usageFromJSON(usageResponses, []byte(responses)); !ok || got != responsesWant {
		t.Errorf("responses JSON: %+v %v, want %+v", got, ok, responsesWant)
	}
	completed := sse.Event{Name: "response.completed", Data: []byte(`{"type":"response.completed","sequence_number":12,"response":` + responses + `}`)}
	if got, ok := usageFromEvent(usageResponses, completed); !ok || got != responsesWant {
		t.Errorf("responses stream: %+v %v, want %+v", got, ok, responsesWant)
	}
}

// anthropicStream is a Messages stream whose message_start reports the
// input, the cache read and the cache write with its 5m/1h split, and
// whose message_delta reports delta (the usage object's fields).
func anthropicStream(start, delta string) string {
	return `event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":` + start + `}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":` + delta + `}

event: message_stop
data: {"type":"message_stop"}

`
}

// TestUsageAnthropic reads Anthropic usage: input_tokens excludes the cache
// read and the cache write, which are added to the prompt and billed at
// their own prices; the write's 1-hour part comes from cache_creation, the
// rest of cache_creation_input_tokens is 5-minute; message_delta's fields
// replace message_start's.
func TestUsageAnthropic(t *testing.T) {
	t.Parallel()
	split := `{"input_tokens":50,"cache_creation_input_tokens":3000,"cache_read_input_tokens":10000,` +
		`"cache_creation":{"ephemeral_5m_input_tokens":1000,"ephemeral_1h_input_tokens":2000},"output_tokens":%d,"service_tier":"standard"}`
	full := pricing.Usage{PromptTokens: 13_050, CompletionTokens: 300, CachedTokens: 10_000, CacheWriteTokens: 1000, CacheWrite1hTokens: 2000}
	for _, tc := range []struct {
		name   string
		answer string // a non-streaming answer's usage
		start  string // else a stream: message_start's usage
		delta  string // and message_delta's
		want   pricing.Usage
	}{
		{name: "answer with split", answer: strings.Replace(split, "%d", "300", 1), want: full},
		{name: "answer without split (older API versions): all 5-minute",
			answer: `{"input_tokens":20,"cache_creation_input_tokens":500,"cache_read_input_tokens":0,"output_tokens":7}`,
			want:   pricing.Usage{PromptTokens: 520, CompletionTokens: 7, CacheWriteTokens: 500}},
		{name: "answer without cache", answer: `{"input_tokens":12,"output_tokens":8}`,
			want: pricing.Usage{PromptTokens: 12, CompletionTokens: 8}},
		{name: "split only 1-hour", answer: `{"input_tokens":1,"cache_creation_input_tokens":40,"cache_read_input_tokens":0,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":40},"output_tokens":2}`,
			want: pricing.Usage{PromptTokens: 41, CompletionTokens: 2, CacheWrite1hTokens: 40}},
		// The total is what Anthropic bills: a split above it is capped.
		{name: "split above the total", answer: `{"input_tokens":1,"cache_creation_input_tokens":100,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":500},"output_tokens":2}`,
			want: pricing.Usage{PromptTokens: 101, CompletionTokens: 2, CacheWrite1hTokens: 100}},
		{name: "stream: input in message_start, output in message_delta",
			start: strings.Replace(split, "%d", "1", 1), delta: `{"output_tokens":300}`, want: full},
		// Newer API versions repeat the input fields in message_delta:
		// they are the final counts; the split of message_start stays.
		{name: "stream: message_delta repeats the input counts",
			start: strings.Replace(split, "%d", "1", 1),
			delta: `{"input_tokens":50,"cache_creation_input_tokens":3000,"cache_read_input_tokens":10000,"output_tokens":300}`, want: full},
		{name: "stream: message_delta corrects the counts",
			start: `{"input_tokens":50,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}`,
			delta: `{"input_tokens":60,"cache_creation_input_tokens":700,"cache_read_input_tokens":900,"cache_creation":{"ephemeral_5m_input_tokens":200,"ephemeral_1h_input_tokens":500},"output_tokens":30}`,
			want:  pricing.Usage{PromptTokens: 1660, CompletionTokens: 30, CachedTokens: 900, CacheWriteTokens: 200, CacheWrite1hTokens: 500}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.answer != "" {
				raw := `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":` + tc.answer + `}`
				_, u, err := decodeChatAnswer(anthropic.Dialect{}, []byte(raw), "m", "id")
				if got := billedUsage(u); err != nil || got != tc.want {
					t.Errorf("answer: %+v %v, want %+v", got, err, tc.want)
				}
				return
			}
			stream := anthropicStream(tc.start, tc.delta)
			if got := sourceUsage(t, anthropic.Dialect{}, stream); got != tc.want {
				t.Errorf("converted stream: %+v, want %+v", got, tc.want)
			}
			// The passthrough (Messages ingress) only observes the events.
			obs := anthropic.NewChatStream("m", 0)
			for _, ev := range events(t, stream) {
				if err := obs.Observe(ev); err != nil {
					t.Fatal(err)
				}
			}
			if got := billedUsage(obs.Usage()); got != tc.want || !obs.Final() {
				t.Errorf("observed stream: %+v (final %v), want %+v", got, obs.Final(), tc.want)
			}
		})
	}
}

// TestUsageGemini reads Gemini usage: promptTokenCount includes
// cachedContentTokenCount, thinking is output; a stream's last
// usageMetadata is the total.
func TestUsageGemini(t *testing.T) {
	t.Parallel()
	answer := `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":10000,"candidatesTokenCount":200,"totalTokenCount":10450,"cachedContentTokenCount":8000,
"promptTokensDetails":[{"modality":"TEXT","tokenCount":10000}],"cacheTokensDetails":[{"modality":"TEXT","tokenCount":8000}],"thoughtsTokenCount":250},
"modelVersion":"gemini-2.5-pro","responseId":"abc"}`
	want := pricing.Usage{PromptTokens: 10_000, CompletionTokens: 450, CachedTokens: 8000}
	_, u, err := decodeChatAnswer(gemini.Dialect{}, []byte(answer), "m", "id")
	if got := billedUsage(u); err != nil || got != want {
		t.Errorf("answer: %+v %v, want %+v", got, err, want)
	}
	stream := `data: {"candidates":[{"content":{"parts":[{"text":"H"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":10000,"candidatesTokenCount":1,"totalTokenCount":10001,"cachedContentTokenCount":8000},"modelVersion":"gemini-2.5-pro"}

data: {"candidates":[{"content":{"parts":[{"text":"i"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":10000,"candidatesTokenCount":200,"totalTokenCount":10450,"cachedContentTokenCount":8000,"cacheTokensDetails":[{"modality":"TEXT","tokenCount":8000}],"thoughtsTokenCount":250},"modelVersion":"gemini-2.5-pro"}

`
	if got := sourceUsage(t, gemini.Dialect{}, stream); got != want {
		t.Errorf("stream: %+v, want %+v", got, want)
	}
}

// events reads an SSE text.
func events(t *testing.T, text string) []sse.Event {
	t.Helper()
	rd := sse.NewReader(strings.NewReader(text), maxEvent)
	var out []sse.Event
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		ev.Data = append([]byte(nil), ev.Data...) // valid until the next read
		out = append(out, ev)
	}
}

// sourceUsage runs a stream through the chunk source a conversion uses and
// returns the usage it bills.
func sourceUsage(t *testing.T, d dialect.Dialect, text string) pricing.Usage {
	t.Helper()
	src := newChunkSource(d, strings.NewReader(text), "m", "id")
	for {
		_, done, err := src.Next()
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("stream: %v", err)
		}
		if done || err != nil {
			break
		}
	}
	return billedUsage(src.Usage())
}

// decodeUsage's checked tells copyJSON that the answer was scanned whole:
// it must be false for anything that is not JSON, or garbage with a usage
// field in it would reach the client as an answer.
func TestDecodeUsageSaysWhetherTheAnswerIsJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		raw         string
		ok, checked bool
	}{
		{"usage", `{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`, true, true},
		{"truncated after usage", `{"id":"x","usage":{"prompt_tokens":3,"completion_tokens":4}`, false, false},
		{"garbage after the document", `{"usage":{"prompt_tokens":3,"completion_tokens":4}} <html>`, false, false},
		{"usage of the wrong type", `{"usage":{"prompt_tokens":"three"}}`, false, true},
		{"no usage: not decoded", `{"id":"x"}`, false, false},
		{"null usage: not decoded", `{"usage":null}`, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ok, checked := decodeUsage(usageChat, []byte(tc.raw))
			if ok != tc.ok || checked != tc.checked {
				t.Fatalf("ok %v checked %v, want %v %v", ok, checked, tc.ok, tc.checked)
			}
		})
	}
}

// memberValue finds the top-level member only: a usage nested in a choice,
// or written inside a string, is not the answer's usage.
func TestMemberValue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw, want string
		found     bool
	}{
		{`{"usage":{"a":1}}`, `{"a":1}`, true},
		{` { "id" : "x" , "usage" : { "a" : [1, {"b": "}"}] } , "z": 1 }`, `{ "a" : [1, {"b": "}"}] }`, true},
		{`{"choices":[{"usage":{"a":1}}],"usage":null}`, `null`, true},
		{`{"choices":[{"usage":{"a":1}}]}`, ``, false},
		{`{"text":"\"usage\":{\"a\":1}","n":2}`, ``, false},
		{`{"text":"\\","usage":7}`, `7`, true},
		{`{"usage":{"a":1},"usage":{"a":2}}`, `{"a":2}`, true},
		{`["usage",{"usage":1}]`, ``, false},
		{`{"usage":"s\"}"}`, `"s\"}"`, true},
	} {
		val, found := memberValue([]byte(tc.raw), `"usage"`)
		if found != tc.found || string(val) != tc.want {
			t.Errorf("memberValue(%s) = %q %v, want %q %v", tc.raw, val, found, tc.want, tc.found)
		}
	}
}

// FuzzMemberValue: on any valid JSON object, memberValue finds what
// encoding/json decodes as the usage member.
func FuzzMemberValue(f *testing.F) {
	for _, seed := range []string{`{"usage":{"a":1}}`, `{"a":{"usage":1},"usage":[1,"]"]}`, `{"usage":"\\\""}`, `{"x":"usage","usage" : 1e5}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var want struct {
			Usage json.RawMessage `json:"usage"`
		}
		if !json.Valid([]byte(raw)) || json.Unmarshal([]byte(raw), &want) != nil || strings.Contains(raw, `\u`) ||
			strings.Count(strings.ToLower(raw), "usage") != strings.Count(raw, "usage") {
			// Not an object, or a name in other letter case or written with
			// escapes, which encoding/json matches and the relay, on purpose, not.
			return
		}
		val, found := memberValue([]byte(raw), `"usage"`)
		if found != (want.Usage != nil) {
			t.Fatalf("found %v, encoding/json %q", found, want.Usage)
		}
		if found && string(val) != string(want.Usage) {
			t.Fatalf("value %q, encoding/json %q", val, want.Usage)
		}
	})
}
