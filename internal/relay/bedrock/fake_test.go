package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/apptest/fakecloud"
	"github.com/modelgate/modelgate/internal/apptest/fakeupstream"
	"github.com/modelgate/modelgate/internal/relay/bedrock"
	"github.com/modelgate/modelgate/internal/relay/refusal"
)

const (
	accessKey = "AKIAFAKEFAKEFAKE0001"
	secret    = "k8Vz+test/secret/generated/for/this/test"
	region    = "us-west-2"
	claude    = "anthropic.claude-3-5-sonnet-20240620-v1:0"
)

// env is a fake Bedrock over a fake Anthropic backend.
type env struct {
	backend *fakeupstream.Server
	fake    *fakecloud.Bedrock
}

func newEnv(t *testing.T, sessionToken string) env {
	backend := fakeupstream.New(t)
	fake := fakecloud.NewBedrock(t, backend, fakeupstream.DefaultKey,
		fakecloud.AWSCredentials{AccessKeyID: accessKey, SecretAccessKey: secret, SessionToken: sessionToken}, region)
	return env{backend, fake}
}

func (e env) channel(t *testing.T, key string) *bedrock.Channel {
	t.Helper()
	c, err := bedrock.New(e.fake.URL, key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func goodKey() string { return accessKey + "|" + secret + "|" + region }

func do(t *testing.T, c *bedrock.Channel, op bedrock.Operation, model string, body []byte) *http.Response {
	t.Helper()
	req, err := c.NewRequest(context.Background(), op, model, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const messages = `{"model":"claude-3-5-sonnet","max_tokens":256,"messages":[{"role":"user","content":"hi"}]}`

func TestInvokeSigned(t *testing.T) {
	e := newEnv(t, "")
	body, err := bedrock.MessagesBody([]byte(messages), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := do(t, e.channel(t, goodKey()), bedrock.Invoke, claude, body)
	b := readAll(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(string(b), fakeupstream.DefaultReply) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := e.fake.LastRequest(t)
	if got.Path != "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke" {
		t.Fatalf("path %s", got.Path)
	}
	if got.Header.Get("X-Amz-Date") == "" || !strings.HasPrefix(got.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential="+accessKey+"/") {
		t.Fatalf("headers %v", got.Header)
	}
	if e.backend.LastRequest().Model != claude {
		t.Fatalf("backend model %q", e.backend.LastRequest().Model)
	}
}

func TestSignatureRefusals(t *testing.T) {
	e := newEnv(t, "")
	body, _ := bedrock.MessagesBody([]byte(messages), nil)
	for name, tc := range map[string]struct {
		key       string
		now       func() time.Time
		tamper    bool
		exception string
	}{
		"wrong secret":       {key: accessKey + "|wrong-secret|" + region, exception: "InvalidSignatureException"},
		"unknown access key": {key: "AKIAFAKEFAKEFAKE0002|" + secret + "|" + region, exception: "UnrecognizedClientException"},
		"wrong region":       {key: accessKey + "|" + secret + "|us-east-1", exception: "InvalidSignatureException"},
		"signed 10 min ago":  {key: goodKey(), now: func() time.Time { return time.Now().Add(-10 * time.Minute) }, exception: "InvalidSignatureException"},
		"body changed after": {key: goodKey(), tamper: true, exception: "InvalidSignatureException"},
		"unexpected token":   {key: goodKey() + "|some-session-token", exception: "UnrecognizedClientException"},
	} {
		t.Run(name, func(t *testing.T) {
			c := e.channel(t, tc.key)
			c.Now = tc.now
			before := e.backend.Count()
			req, err := c.NewRequest(context.Background(), bedrock.Invoke, claude, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.tamper {
				changed := strings.Replace(string(body), `"max_tokens":256`, `"max_tokens":999`, 1)
				req.Body = io.NopCloser(strings.NewReader(changed))
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b := readAll(t, resp)
			r := bedrock.Classify(resp.StatusCode, resp.Header, b)
			if resp.StatusCode != 403 || r.Code != tc.exception || r.Kind != refusal.Key {
				t.Fatalf("%d %+v", resp.StatusCode, r)
			}
			if e.backend.Count() != before {
				t.Fatal("a refused request reached the model")
			}
		})
	}
}

func TestSessionTokenAndARN(t *testing.T) {
	e := newEnv(t, "FwoGZXIvYXdzEJr//session")
	body, _ := bedrock.MessagesBody([]byte(messages), nil)
	if resp := do(t, e.channel(t, goodKey()), bedrock.Invoke, claude, body); resp.StatusCode != 403 {
		t.Fatalf("without the session token: %d", resp.StatusCode)
	}
	c := e.channel(t, goodKey()+"|FwoGZXIvYXdzEJr//session")
	arn := "arn:aws:bedrock:us-west-2:123456789012:inference-profile/us.anthropic.claude-3-7-sonnet-20250219-v1:0"
	resp := do(t, c, bedrock.Invoke, arn, body)
	if b := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if e.backend.LastRequest().Model != arn {
		t.Fatalf("model %q", e.backend.LastRequest().Model)
	}
}

func TestInvokeRefusesModelAndStreamInBody(t *testing.T) {
	e := newEnv(t, "")
	resp := do(t, e.channel(t, goodKey()), bedrock.Invoke, claude, []byte(messages))
	b := readAll(t, resp)
	if r := bedrock.Classify(resp.StatusCode, resp.Header, b); resp.StatusCode != 400 || r.Kind != refusal.Request {
		t.Fatalf("%d %+v", resp.StatusCode, r)
	}
}

func TestInvokeStream(t *testing.T) {
	e := newEnv(t, "")
	e.backend.SetBehavior(fakeupstream.Behavior{PromptTokens: 30, CachedTokens: 10, CompletionTokens: 7, Reply: "one two three"})
	body, _ := bedrock.MessagesBody([]byte(messages), []string{"fine-grained-tool-streaming-2025-05-14"})
	resp := do(t, e.channel(t, goodKey()), bedrock.InvokeStream, claude, body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("%d %s", resp.StatusCode, resp.Header)
	}
	if got := e.backend.LastRequest().Header.Get("Anthropic-Beta"); got != "fine-grained-tool-streaming-2025-05-14" {
		t.Fatalf("beta %q", got)
	}
	s := bedrock.NewAnthropicStream(resp.Body, 1<<20)
	var names []string
	var text strings.Builder
	for {
		ev, err := s.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, ev.Name)
		var d struct {
			Delta struct{ Text string } `json:"delta"`
		}
		_ = json.Unmarshal(ev.Data, &d)
		text.WriteString(d.Delta.Text)
	}
	if text.String() != "one two three" || names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Fatalf("events %v, text %q", names, text.String())
	}
	if m := s.Metrics(); m == nil || m.InputTokenCount != 20 || m.OutputTokenCount != 7 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestInvokeStreamException(t *testing.T) {
	e := newEnv(t, "")
	e.fake.SetStreamException("throttlingException")
	body, _ := bedrock.MessagesBody([]byte(messages), nil)
	s := bedrock.NewAnthropicStream(do(t, e.channel(t, goodKey()), bedrock.InvokeStream, claude, body).Body, 1<<20)
	if _, err := s.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Next()
	var r *refusal.Error
	if !errors.As(err, &r) || r.Kind != refusal.Throttled {
		t.Fatalf("err %v", err)
	}
}

func TestThrottledAnswer(t *testing.T) {
	e := newEnv(t, "")
	e.backend.SetBehavior(fakeupstream.Behavior{Status: 429})
	body, _ := bedrock.MessagesBody([]byte(messages), nil)
	resp := do(t, e.channel(t, goodKey()), bedrock.Invoke, claude, body)
	b := readAll(t, resp)
	if r := bedrock.Classify(resp.StatusCode, resp.Header, b); r.Kind != refusal.Throttled || r.Code != "ThrottlingException" {
		t.Fatalf("%d %+v", resp.StatusCode, r)
	}
}

// Hundreds of identical calls in parallel on one channel: each is signed
// on its own (the signer is shared) and every one is accepted.
func TestParallelSignedCalls(t *testing.T) {
	e := newEnv(t, "")
	c := e.channel(t, goodKey())
	body, _ := bedrock.MessagesBody([]byte(messages), nil)
	const n = 200
	errs := make(chan error, n)
	for range n {
		go func() {
			req, err := c.NewRequest(context.Background(), bedrock.Invoke, claude, body)
			if err != nil {
				errs <- err
				return
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				err = errors.New(resp.Status)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := e.backend.Count(); got != n {
		t.Fatalf("backend saw %d calls, want %d", got, n)
	}
}

// A stream the upstream cuts ends in an error, never in a clean end that
// would pass for a complete (and completely billed) answer.
func TestCutStreamsEndInAnError(t *testing.T) {
	e := newEnv(t, "")
	e.backend.SetBehavior(fakeupstream.Behavior{Reply: "one two three", Chunks: 3, FailAfter: 1})
	c := e.channel(t, goodKey())

	body, _ := bedrock.MessagesBody([]byte(messages), nil)
	s := bedrock.NewAnthropicStream(do(t, c, bedrock.InvokeStream, claude, body).Body, 1<<20)
	var err error
	for err == nil {
		_, err = s.Next()
	}
	if err == io.EOF {
		t.Fatal("invoke stream: a cut stream ended cleanly")
	}

	frames := bedrock.NewStreamReader(do(t, c, bedrock.ConverseStream, "amazon.nova-pro-v1:0",
		converseBody(t, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)).Body, 1<<20)
	chat := bedrock.NewChatStream("m", "id", 1)
	for {
		f, err := frames.Next()
		if err != nil {
			if err == io.EOF || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("converse stream: %v, want an unexpected EOF", err)
			}
			break
		}
		if _, err := chat.Convert(f.EventType, f.Payload); err != nil {
			t.Fatal(err)
		}
	}
	if chat.Done() || chat.HasUsage() {
		t.Fatal("a cut converse stream looks complete")
	}
}
