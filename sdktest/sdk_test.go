package sdktest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
)

// installHint is how to get what the test needs.
const installHint = "install Node.js >= 20, then run: npm ci --prefix sdktest"

// Keys of the world, by role (scenario.key).
const (
	keyMain      = "main"      // unlimited key of a funded user, no allow list
	keyAllowList = "allowlist" // same user, allowed gpt-test and embed-test only
	keyExhausted = "exhausted" // limited key with no quota left
	keyLow       = "lowkey"    // limited key with less quota than any call needs
	keyBroke     = "broke"     // unlimited key of a user whose balance is 0
	keyPoor      = "poor"      // unlimited key of a user with a balance of 1 (too low for a call)
	keyInvalid   = "invalid"   // a key the gateway never issued
)

// world is a gateway set up for the scenarios: a funded user with several
// keys, two users who cannot pay, and models on OpenAI and Anthropic
// channels.
//
//	gpt-test       OpenAI channel, priced
//	embed-test     OpenAI channel, priced
//	claude-test    Anthropic channel only, priced
//	unpriced-test  OpenAI channel, no price      (unusable: not listed)
//	nochannel-test priced, no channel            (unusable: not listed)
//	vip-test       OpenAI channel in group vip   (the caller is in default)
type world struct {
	env       *apptest.Env
	g         *apptest.Gateway
	openAI    *fakeupstream.Server
	anthropic *fakeupstream.Server
	keys      map[string]string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	e := apptest.New(t)
	w := &world{env: e, openAI: fakeupstream.New(t), anthropic: fakeupstream.New(t)}
	g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: w.openAI.URL, Model: "gpt-test"})
	w.g = g
	g.AddChannel(apptest.ChannelSpec{URL: w.openAI.URL, Name: "openai-more", Models: "embed-test,unpriced-test"})
	g.AddChannel(apptest.ChannelSpec{URL: w.anthropic.URL, Type: 14, Name: "anthropic", Models: "claude-test"})
	g.AddChannel(apptest.ChannelSpec{URL: w.openAI.URL, Name: "vip", Models: "vip-test", Group: "vip"})
	for _, m := range []string{"embed-test", "claude-test", "vip-test", "nochannel-test"} {
		g.Root.OK("POST", "/api/model_price/", map[string]any{"model_name": m, "input_price": 2, "output_price": 8})
	}

	w.keys = map[string]string{
		keyMain:      g.Key,
		keyAllowList: g.User.CreateToken(map[string]any{"name": "allow", "unlimited_quota": true, "models": "gpt-test,embed-test"}).Key,
		keyExhausted: g.User.CreateToken(map[string]any{"name": "empty"}).Key, // limited, remain_quota 0
		keyLow:       g.User.CreateToken(map[string]any{"name": "low", "remain_quota": 1}).Key,
		keyInvalid:   "sk-" + strings.Repeat("0", 48),
	}
	broke, _ := e.NewUser("broke", 1) // new users start with NewUserQuota, 0 by default
	w.keys[keyBroke] = broke.CreateToken(map[string]any{"name": "k", "unlimited_quota": true}).Key
	poor, poorID := e.NewUser("poor", 1)
	g.Root.OK("POST", "/api/topup", map[string]any{"user_id": poorID, "quota": 1})
	w.keys[keyPoor] = poor.CreateToken(map[string]any{"name": "k", "unlimited_quota": true}).Key
	return w
}

// scenario is one SDK call and what the SDK must report.
type scenario struct {
	name       string
	op         string // an op of sdk.mjs: openai.chat, anthropic.messages.stream, …
	key        string // a key role (keyMain…)
	model      string
	maxRetries int
	want       want
}

// want is the expected outcome; zero fields are not checked, except
// attempts (zero means exactly 1 HTTP request).
type want struct {
	// Success.
	content string
	usage   map[string]int64 // fields of the usage object
	models  []string         // the whole list, sorted
	dims    bool             // an embedding with at least one dimension
	count   bool             // countTokens: {input_tokens: N}, N >= 1, nothing else

	// Failure.
	class   string // the SDK's error class
	status  int
	code    string // OpenAI error.code
	typ     string // OpenAI error.type; Anthropic error.error.type
	message string // the error body's message, exactly

	// attempts is the number of HTTP requests the SDK made (0 means 1).
	attempts int
}

// result is one line of sdk.mjs.
type result struct {
	Name        string                     `json:"name"`
	Op          string                     `json:"op"`
	OK          bool                       `json:"ok"`
	Content     *string                    `json:"content"`
	Usage       map[string]json.RawMessage `json:"usage"`
	Models      []string                   `json:"models"`
	Dims        int                        `json:"dims"`
	Count       map[string]json.RawMessage `json:"count"`
	Class       string                     `json:"class"`
	Status      int                        `json:"status"`
	Code        *string                    `json:"code"`
	Type        *string                    `json:"type"`
	Error       json.RawMessage            `json:"error"`
	Message     string                     `json:"message"`
	Attempts    int                        `json:"attempts"`
	Requests    []string                   `json:"requests"`
	ShouldRetry *string                    `json:"shouldRetry"`
	MS          int64                      `json:"ms"`
	raw         string
}

// errorBody is err.error as either SDK exposes it: OpenAI's SDK gives the
// body's "error" object, Anthropic's the whole body.
type errorBody struct {
	Type    string `json:"type"`    // OpenAI: the error type; Anthropic: "error"
	Message string `json:"message"` // OpenAI
	Error   *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"` // Anthropic
}

// runScenarios runs every scenario in one node process and checks each in
// its own subtest.
func runScenarios(t *testing.T, w *world, scenarios []scenario) {
	node := requireNode(t)
	type call struct {
		Name       string `json:"name"`
		Op         string `json:"op"`
		Key        string `json:"key"`
		Model      string `json:"model"`
		MaxRetries int    `json:"maxRetries"`
	}
	calls := make([]call, len(scenarios))
	names := map[string]bool{}
	for i, s := range scenarios {
		if names[s.name] {
			t.Fatalf("two scenarios named %s", s.name)
		}
		names[s.name] = true
		key, ok := w.keys[s.key]
		if !ok {
			t.Fatalf("%s: unknown key role %q", s.name, s.key)
		}
		calls[i] = call{Name: s.name, Op: s.op, Key: key, Model: s.model, MaxRetries: s.maxRetries}
	}
	in, _ := json.Marshal(calls)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sdk.mjs", "--batch")
	cmd.Env = append(sdkFreeEnv(), "MODELGATE_BASE_URL="+w.env.Server.URL)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node sdk.mjs: %v\nstderr: %s\nstdout: %s", err, stderr.Bytes(), out)
	}
	t.Logf("%d SDK calls in %v", len(calls), time.Since(start).Round(time.Millisecond))
	results := map[string]result{}
	for line := range strings.Lines(string(out)) {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("not a JSON line: %q", line)
		}
		r.raw = strings.TrimSpace(line)
		results[r.Name] = r
	}
	for _, s := range scenarios {
		t.Run(s.name, func(t *testing.T) {
			r, ok := results[s.name]
			if !ok {
				t.Fatalf("no result line for %s", s.name)
			}
			check(t, s, r)
		})
	}
}

// requireNode returns the node binary, or skips when node or the SDK
// packages are missing.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: " + installHint)
	}
	for _, pkg := range []string{"openai", "@anthropic-ai/sdk"} {
		if _, err := os.Stat(filepath.Join("node_modules", pkg, "package.json")); err != nil {
			t.Skipf("sdktest/node_modules/%s missing: %s", pkg, installHint)
		}
	}
	return node
}

// sdkFreeEnv is the environment without the variables the SDKs read
// (OPENAI_API_KEY, ANTHROPIC_AUTH_TOKEN, OPENAI_CUSTOM_HEADERS…): a
// developer's own settings must not change what the gateway receives.
func sdkFreeEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OPENAI_") && !strings.HasPrefix(kv, "ANTHROPIC_") {
			env = append(env, kv)
		}
	}
	return env
}

// check compares one result with its scenario's want.
func check(t *testing.T, s scenario, r result) {
	t.Helper()
	t.Logf("%s", r.raw)
	wt := s.want
	failed := wt.class != ""
	if r.OK == failed {
		if failed {
			t.Fatalf("want %s %d, the call succeeded", wt.class, wt.status)
		}
		t.Fatalf("want success, got %s %d: %s", r.Class, r.Status, r.Message)
	}
	if failed {
		checkError(t, s, r)
	} else {
		checkSuccess(t, wt, r)
	}
	attempts := max(wt.attempts, 1)
	if r.Attempts != attempts {
		t.Errorf("the SDK made %d HTTP requests %v, want %d", r.Attempts, r.Requests, attempts)
	}
}

func checkSuccess(t *testing.T, wt want, r result) {
	t.Helper()
	if wt.content != "" && (r.Content == nil || *r.Content != wt.content) {
		t.Errorf("content %v, want %q", deref(r.Content), wt.content)
	}
	for field, n := range wt.usage {
		var got int64
		if err := json.Unmarshal(r.Usage[field], &got); err != nil || got != n {
			t.Errorf("usage.%s = %s, want %d (usage %v)", field, r.Usage[field], n, r.Usage)
		}
	}
	if wt.models != nil && !slices.Equal(r.Models, wt.models) {
		t.Errorf("models %q, want %q", r.Models, wt.models)
	}
	if wt.dims && r.Dims < 1 {
		t.Errorf("embedding has %d dimensions", r.Dims)
	}
	if wt.count {
		var n int64
		if err := json.Unmarshal(r.Count["input_tokens"], &n); err != nil || n < 1 || len(r.Count) != 1 {
			t.Errorf("countTokens answered %v, want {input_tokens: N >= 1}", r.Count)
		}
	}
}

func checkError(t *testing.T, s scenario, r result) {
	t.Helper()
	wt := s.want
	if r.Class != wt.class || r.Status != wt.status {
		t.Errorf("got %s %d, want %s %d", r.Class, r.Status, wt.class, wt.status)
	}
	var body errorBody
	if err := json.Unmarshal(r.Error, &body); err != nil || len(r.Error) == 0 || string(r.Error) == "null" {
		t.Fatalf("the SDK parsed no error body: %s", r.Error)
	}
	if strings.HasPrefix(s.op, "anthropic.") {
		// Anthropic's shape: {"type":"error","error":{"type":…,"message":…}};
		// the SDK's err.type is error.type.
		if body.Type != "error" || body.Error == nil {
			t.Fatalf("not an Anthropic error body: %s", r.Error)
		}
		if wt.typ != "" && (body.Error.Type != wt.typ || deref(r.Type) != wt.typ) {
			t.Errorf("error.type %q (err.type %v), want %q", body.Error.Type, deref(r.Type), wt.typ)
		}
		if wt.message != "" && body.Error.Message != wt.message {
			t.Errorf("message %q, want %q", body.Error.Message, wt.message)
		}
		return
	}
	// OpenAI's shape: {"error":{"message":…,"type":…,"code":…}}; the SDK
	// exposes the inner object and its code and type.
	if body.Message == "" {
		t.Errorf("OpenAI error body without a message: %s", r.Error)
	}
	if wt.code != "" && deref(r.Code) != wt.code {
		t.Errorf("err.code %v, want %q", deref(r.Code), wt.code)
	}
	if wt.typ != "" && deref(r.Type) != wt.typ {
		t.Errorf("err.type %v, want %q", deref(r.Type), wt.typ)
	}
	if wt.message != "" && body.Message != wt.message {
		t.Errorf("message %q, want %q", body.Message, wt.message)
	}
}

func deref(s *string) any {
	if s == nil {
		return nil
	}
	return *s
}
