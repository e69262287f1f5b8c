package relay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest"
	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/channel"
)

// codexBinary is the Codex CLI to run: $MODELGATE_CODEX, else codex on the
// PATH. Without one the test is skipped (npm i -g @openai/codex installs it).
func codexBinary(t *testing.T) string {
	if p := os.Getenv("MODELGATE_CODEX"); p != "" {
		return p
	}
	p, err := exec.LookPath("codex")
	if err != nil {
		t.Skip("Codex CLI not installed (set MODELGATE_CODEX or put codex on the PATH)")
	}
	return p
}

// TestCodexThroughConversion runs `codex exec` (it speaks only the
// Responses API) against the gateway for a model behind each converting
// channel kind (codexWritesAFile says what it checks).
func TestCodexThroughConversion(t *testing.T) {
	apptest.Parallel(t)
	codex := codexBinary(t)
	for _, kind := range responsesKinds {
		t.Run(kind.name, func(t *testing.T) {
			e := apptest.New(t)
			up := fakeupstream.New(t)
			up.SetChatOnly(kind.chatOnly)
			g := e.NewGateway(apptest.GatewayConfig{UpstreamURL: up.URL, ChannelType: kind.typ})
			codexWritesAFile(t, codex, e, g, up, "gpt-test", func(r fakeupstream.Request) bool {
				return strings.HasPrefix(r.Path, kind.path) // native tries aside
			})
		})
	}
}

// TestCodexOnCloudChannels: the same task on a model behind Bedrock
// (Converse and Claude) and Vertex (Gemini and Claude), through the cloud
// fakes that verify SigV4 and the service account's JWT grant; every
// request their backend sees is a model call.
func TestCodexOnCloudChannels(t *testing.T) {
	apptest.Parallel(t)
	codex := codexBinary(t)
	anyCall := func(fakeupstream.Request) bool { return true }
	for _, model := range []string{bedrockNova, bedrockClaude} {
		t.Run("bedrock "+model, func(t *testing.T) {
			up := fakeupstream.New(t)
			b := fakecloud.NewBedrock(t, up, fakeupstream.DefaultKey, awsCreds, "us-east-1")
			c := newCloudGatewayOn(t, apptest.New(t), up, channel.TypeBedrock, b.URL, bedrockKey(awsCreds, "us-east-1"), model)
			codexWritesAFile(t, codex, c.e, c.g, up, model, anyCall)
		})
	}
	for _, model := range []string{vertexGemini, vertexClaude} {
		t.Run("vertex "+model, func(t *testing.T) {
			up := fakeupstream.New(t)
			tokens := fakecloud.NewGoogleTokens(t)
			sa := tokens.NewServiceAccount(t, "gateway", "proj-1")
			v := fakecloud.NewVertex(t, tokens, up, fakeupstream.DefaultKey, "us-central1")
			c := newCloudGatewayOn(t, apptest.New(t), up, channel.TypeVertex, v.URL, sa.JSON, model)
			codexWritesAFile(t, codex, c.e, c.g, up, model, anyCall)
		})
	}
}

// codexWritesAFile runs `codex exec` against g for model. The fake upstream
// plays the model: it first calls Codex's shell tool to write a file, then
// answers in text once the tool's output comes back. The file must exist,
// the output must have reached the upstream in the second model call
// (isModelCall picks those from up's requests), and both calls must be
// billed exactly.
func codexWritesAFile(t *testing.T, codex string, e *apptest.Env, g *apptest.Gateway, up *fakeupstream.Server, model string, isModelCall func(fakeupstream.Request) bool) {
	t.Helper()
	before := g.Quota(g.UserID)
	work := t.TempDir()
	// Codex 0.171's shell tool for a model it does not know is the
	// function exec_command; the argument names are its own.
	args, _ := json.Marshal(map[string]any{"cmd": "printf from-codex > hello.txt", "workdir": work})
	up.SetBehavior(fakeupstream.Behavior{Reply: "Wrote hello.txt.", PromptTokens: 900, CompletionTokens: 6})
	up.Script(fakeupstream.Behavior{ToolCall: &fakeupstream.ToolCall{Name: "exec_command", Arguments: string(args)},
		PromptTokens: 800, CompletionTokens: 20})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"-C", work, "-m", model,
		"-c", "model_provider=modelgate",
		"-c", `model_providers.modelgate={name="modelgate", base_url="`+e.Server.URL+`/v1", env_key="MODELGATE_TEST_KEY", wire_api="responses", request_max_retries=0, stream_max_retries=0}`,
		"Write from-codex into hello.txt")
	cmd.Env = append(os.Environ(), "CODEX_HOME="+t.TempDir(), "MODELGATE_TEST_KEY="+g.Key)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\n%s", err, out.String())
	}
	got, err := os.ReadFile(filepath.Join(work, "hello.txt"))
	if err != nil || string(got) != "from-codex" {
		t.Fatalf("hello.txt: %q %v\ncodex said:\n%s", got, err, out.String())
	}
	if !strings.Contains(out.String(), "Wrote hello.txt.") {
		t.Fatalf("codex did not print the final answer:\n%s", out.String())
	}
	var calls []fakeupstream.Request
	for _, r := range up.Requests() {
		if isModelCall(r) {
			calls = append(calls, r)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d model calls upstream, want 2: %+v", len(calls), up.Requests())
	}
	if !bytes.Contains(calls[1].Body, []byte("from-codex")) && !bytes.Contains(calls[1].Body, []byte("Exit code: 0")) {
		t.Fatalf("the tool's output did not reach the upstream: %s", calls[1].Body)
	}
	want := int64(2*800 + 8*20 + 2*900 + 8*6)
	if spent := before - g.Quota(g.UserID); spent != want {
		t.Fatalf("spent %d, want %d", spent, want)
	}
}
