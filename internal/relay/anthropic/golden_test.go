package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/sse"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// created pins the timestamp of converted OpenAI responses and chunks.
const created = 1700000000

// eachCase runs fn on every testdata/dir/*suffix file and compares what it
// returns, indented, with the file's .out.json golden.
func eachCase(t *testing.T, dir, suffix string, fn func(t *testing.T, in []byte) any) {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join("testdata", dir, "*"+suffix))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no cases in testdata/%s (%v)", dir, err)
	}
	for _, path := range inputs {
		name := strings.TrimSuffix(filepath.Base(path), suffix)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, strings.TrimSuffix(path, suffix)+".out.json", fn(t, in))
		})
	}
}

func golden(t *testing.T, path string, got any) {
	t.Helper()
	b, err := json.MarshalIndent(got, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs (go test -update rewrites it):\n%s", path, firstDiff(string(want), string(b)))
	}
}

// firstDiff shows the first line where want and got differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return "line " + strconv.Itoa(i+1) + ":\n  want: " + wl + "\n  got:  " + gl
		}
	}
	return ""
}

func decode[T any](t *testing.T, in []byte) *T {
	t.Helper()
	v := new(T)
	if err := json.Unmarshal(in, v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestFromChatRequestGolden(t *testing.T) {
	eachCase(t, "from_chat_request", ".in.json", func(t *testing.T, in []byte) any {
		got, err := FromChatRequest(decode[openai.ChatRequest](t, in), "claude-sonnet-4-5-20250929")
		if err != nil {
			t.Fatal(err)
		}
		return got
	})
}

func TestToChatRequestGolden(t *testing.T) {
	eachCase(t, "to_chat_request", ".in.json", func(t *testing.T, in []byte) any {
		got, err := ToChatRequest(decode[Request](t, in), "gpt-4o")
		if err != nil {
			t.Fatal(err)
		}
		return got
	})
}

func TestToChatResponseGolden(t *testing.T) {
	eachCase(t, "to_chat_response", ".in.json", func(t *testing.T, in []byte) any {
		resp := decode[Response](t, in)
		got := ToChatResponse(resp, "claude-alias", created)
		if u := UsageOf(resp); !reflect.DeepEqual(*got.Usage, u) {
			t.Errorf("response usage %+v, UsageOf %+v", *got.Usage, u)
		}
		return got
	})
}

func TestFromChatResponseGolden(t *testing.T) {
	eachCase(t, "from_chat_response", ".in.json", func(t *testing.T, in []byte) any {
		return FromChatResponse(decode[openai.ChatResponse](t, in), "claude-alias")
	})
}

// chatStreamResult is what a ChatStream made of a transcript.
type chatStreamResult struct {
	Chunks     []openai.ChatChunk `json:"chunks"`
	Error      string             `json:"error,omitempty"`
	Done       bool               `json:"done"`
	Usage      openai.Usage       `json:"usage"`
	UsageChunk openai.ChatChunk   `json:"usage_chunk"`
}

func TestChatStreamGolden(t *testing.T) {
	eachCase(t, "chat_stream", ".sse", func(t *testing.T, in []byte) any {
		events := readEvents(t, in)
		s := NewChatStream("claude-alias", created)
		var res chatStreamResult
		for _, ev := range events {
			chunks, err := s.Convert(ev)
			res.Chunks = append(res.Chunks, chunks...)
			if err != nil {
				var se *StreamError
				if !errors.As(err, &se) {
					t.Fatalf("error %v is not a *StreamError", err)
				}
				res.Error = err.Error()
				break
			}
		}
		res.Done, res.Usage, res.UsageChunk = s.Done(), s.Usage(), s.UsageChunk()
		checkChunks(t, res.Chunks)

		// Observe, the passthrough path, must account the same.
		o := NewChatStream("", 0)
		for _, ev := range events {
			if err := o.Observe(ev); err != nil {
				break
			}
		}
		if !reflect.DeepEqual(o.Usage(), res.Usage) || o.Done() != res.Done {
			t.Errorf("Observe: usage %+v done %v, Convert: %+v %v", o.Usage(), o.Done(), res.Usage, res.Done)
		}
		return res
	})
}

func readEvents(tb testing.TB, in []byte) []sse.Event {
	tb.Helper()
	r := sse.NewReader(bytes.NewReader(in), 1<<20)
	var events []sse.Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return events
		}
		if err != nil {
			tb.Fatal(err)
		}
		events = append(events, sse.Event{Name: ev.Name, Data: bytes.Clone(ev.Data)})
	}
}

// checkChunks checks what an OpenAI client relies on: the role comes first,
// and each tool call's accumulated arguments are a JSON object.
func checkChunks(t *testing.T, chunks []openai.ChatChunk) {
	t.Helper()
	args := map[int]string{}
	for i, c := range chunks {
		if len(c.Choices) != 1 {
			t.Fatalf("chunk %d has %d choices", i, len(c.Choices))
		}
		if (c.Choices[0].Delta.Role == "assistant") != (i == 0) {
			t.Errorf("chunk %d: role %q", i, c.Choices[0].Delta.Role)
		}
		for _, tc := range c.Choices[0].Delta.ToolCalls {
			args[*tc.Index] += tc.Function.Arguments
		}
	}
	for i, a := range args {
		var obj map[string]any
		if err := json.Unmarshal([]byte(a), &obj); err != nil {
			t.Errorf("tool call %d: arguments %q: %v", i, a, err)
		}
	}
}

// namedEvent shows an event in a golden file.
type namedEvent struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
}

func TestMessagesStreamGolden(t *testing.T) {
	eachCase(t, "messages_stream", ".in.json", func(t *testing.T, in []byte) any {
		chunks := *decode[[]openai.ChatChunk](t, in)
		s := NewMessagesStream("claude-alias", "msg_gw_1")
		var events []sse.Event
		for i := range chunks {
			events = append(events, s.Convert(&chunks[i])...)
		}
		events = append(events, s.Finish()...)
		if extra := s.Finish(); extra != nil {
			t.Errorf("second Finish returned %d events", len(extra))
		}
		checkEvents(t, events)
		out := make([]namedEvent, len(events))
		for i, ev := range events {
			out[i] = namedEvent{ev.Name, ev.Data}
		}
		return out
	})
}
