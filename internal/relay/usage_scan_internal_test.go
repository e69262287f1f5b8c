package relay

import (
	"encoding/json"
	"testing"
)

// usageScanCases are usage objects scanUsage must read exactly as
// encoding/json does.
var usageScanCases = []string{
	`{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}`,
	`{"input_tokens":3,"output_tokens":4,"input_tokens_details":{"cached_tokens":2}}`,
	`{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":5,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":3}}`,
	`{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":null}`,
	`{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":5},"prompt_tokens_details":{}}`,
	`{"prompt_tokens":9,"prompt_tokens_details":null,"prompt_tokens_details":{"cached_tokens":1}}`,
	`{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":null}}`,
	`{"prompt_tokens":9,"prompt_tokens_details":[1]}`,
	`{"prompt_tokens":9,"prompt_tokens_details":"x"}`,
	`{"PROMPT_TOKENS":9,"Completion_Tokens":7}`,
	`{"prompt_tokens":9,"prompt_tokens":2}`,
	`{"prompt_tokens":null,"completion_tokens":7}`,
	`{"prompt_tokens":1.5,"completion_tokens":7}`,
	`{"prompt_tokens":1e3,"completion_tokens":7}`,
	`{"prompt_tokens":"9","completion_tokens":7}`,
	`{"prompt_tokens":true}`,
	`{"prompt_tokens":{}}`,
	`{"prompt_tokens":-5,"completion_tokens":-0}`,
	`{"prompt_tokens":9223372036854775807}`,
	`{"prompt_tokens":9223372036854775808}`,
	`{"prompt_tokens":-9223372036854775808,"completion_tokens":1}`,
	`{"prompt_tokens":-9223372036854775809}`,
	`{"prompt_tokens":99999999999999999999}`,
	`{"prompt_t\u006fkens":9,"completion_tokens":7}`,
	`{"ſrompt_tokens":9}`,
	`{"prompt_toKens":9}`,
	`{"prompt_to\u212aens":9,"completion_tokens":1}`,
	`{"prompt_tokens_details":{"cached_to\u212aens":4},"prompt_tokens":9}`,
	`{ "prompt_tokens" : 9 , "completion_tokens" : 7 , "x" : [ {"a":"}"} ] }`,
	`{"a":"\"}","prompt_tokens":3}`,
	`{}`,
	`null`,
	`[]`,
	`"usage"`,
	`7`,
}

func TestScanUsageMatchesEncodingJSON(t *testing.T) {
	for _, c := range usageScanCases {
		checkScanUsage(t, c)
	}
}

func FuzzScanUsage(f *testing.F) {
	for _, c := range usageScanCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, c string) {
		if json.Valid([]byte(c)) {
			checkScanUsage(t, c)
		}
	})
}

func checkScanUsage(t *testing.T, c string) {
	t.Helper()
	fast, fastOK := scanUsage([]byte(c))
	var wire *wireUsage
	slowOK := json.Unmarshal([]byte(c), &wire) == nil
	if fastOK != slowOK {
		t.Fatalf("%s: scanUsage ok %v, encoding/json %v", c, fastOK, slowOK)
	}
	if !slowOK {
		return
	}
	if fast.reported() != wire.reported() {
		t.Fatalf("%s: reported %v, encoding/json %v", c, fast.reported(), wire.reported())
	}
	if wire != nil && fast.usage() != wire.usage() {
		t.Fatalf("%s: usage %+v, encoding/json %+v", c, fast.usage(), wire.usage())
	}
}

// Reading a complete answer's usage allocates nothing.
func TestDecodeUsageNoAllocation(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts of pooled code are random under the race detector (sync.Pool drops puts; json.Valid takes its scanner from one)")
	}
	raw := []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16,"prompt_tokens_details":{"cached_tokens":2}}}`)
	var u any
	allocs := leastAllocs(100, func() {
		got, ok, checked := decodeUsage(usageChat, raw)
		if !ok || !checked || got.PromptTokens != 9 || got.CompletionTokens != 7 || got.CachedTokens != 2 {
			u = got
		}
	})
	if u != nil {
		t.Fatalf("decoded %+v", u)
	}
	if allocs != 0 {
		t.Fatalf("%v allocations, want 0", allocs)
	}
}

func TestIsUsageOnlyChunkMatchesEncodingJSON(t *testing.T) {
	for _, c := range []string{
		`{"id":"x","choices":[],"usage":{"prompt_tokens":1}}`,
		`{"id":"x","choices":[{"index":0}],"usage":{"prompt_tokens":1}}`,
		`{"choices":[ ],"usage":{}}`,
		`{"choices":null}`,
		`{"choices":[1],"choices":[]}`,
		`{"choices":[],"choices":[{}]}`,
		`{"CHOICES":[{}]}`,
		`{"choices":{}}`,
		`{"choices":"x"}`,
		`{"cho\u0069ces":[{}]}`,
		`{}`,
		`null`,
		`[]`,
		` {"choices" : [ ] } `,
	} {
		if got, want := isUsageOnlyChunk([]byte(c)), decodeUsageOnlyChunk([]byte(c)); got != want {
			t.Errorf("%s: %v, encoding/json %v", c, got, want)
		}
	}
}
