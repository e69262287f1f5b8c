package bedrock_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/internal/relay/bedrock"
	"github.com/modelgate/modelgate/internal/relay/refusal"
)

func frame(t *testing.T, headers map[string]string, payload []byte) []byte {
	t.Helper()
	var hs eventstream.Headers
	for _, k := range []string{":message-type", ":event-type", ":exception-type", ":content-type"} {
		if v, ok := headers[k]; ok {
			hs = append(hs, eventstream.Header{Name: k, Value: eventstream.StringValue(v)})
		}
	}
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: hs, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func chunk(t *testing.T, event string) []byte {
	t.Helper()
	return frame(t, map[string]string{":message-type": "event", ":event-type": "chunk", ":content-type": "application/json"},
		[]byte(`{"bytes":"`+base64.StdEncoding.EncodeToString([]byte(event))+`"}`))
}

func TestAnthropicStreamFramesSplitAcrossReads(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"héllo"}}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`,
		`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":9,"outputTokenCount":4,"invocationLatency":5,"firstByteLatency":2}}`,
	}
	var body []byte
	body = append(body, frame(t, map[string]string{":message-type": "event", ":event-type": "initial-response"}, []byte(`{}`))...)
	for _, e := range events {
		body = append(body, chunk(t, e)...)
	}
	s := bedrock.NewAnthropicStream(iotest.OneByteReader(bytes.NewReader(body)), 1<<20)
	for i, want := range events {
		ev, err := s.Next()
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if string(ev.Data) != want {
			t.Fatalf("event %d = %s, want %s", i, ev.Data, want)
		}
		if i == 1 && ev.Name != "content_block_delta" {
			t.Fatalf("name %q", ev.Name)
		}
	}
	if _, err := s.Next(); err != io.EOF {
		t.Fatalf("end: %v, want io.EOF", err)
	}
	if m := s.Metrics(); m == nil || m.InputTokenCount != 9 || m.OutputTokenCount != 4 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestStreamReaderRefusesBrokenFrames(t *testing.T) {
	good := chunk(t, `{"type":"ping"}`)
	corrupt := append([]byte(nil), good...)
	corrupt[len(corrupt)-6] ^= 0x40 // a payload byte: the message CRC fails
	huge := append([]byte(nil), good...)
	huge[0] = 0x7f // length of 2 GiB
	lying := append([]byte(nil), good...)
	lying[4], lying[5] = 0xff, 0xff // headers longer than the frame
	for name, tc := range map[string]struct {
		body []byte
		want error
	}{
		"cut inside a frame":      {good[:len(good)-3], io.ErrUnexpectedEOF},
		"cut inside the prelude":  {good[:5], io.ErrUnexpectedEOF},
		"checksum mismatch":       {corrupt, nil},
		"frame over the bound":    {huge, bedrock.ErrFrameTooLarge},
		"headers over the length": {lying, nil},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := bedrock.NewStreamReader(iotest.HalfReader(bytes.NewReader(tc.body)), 1<<20).Next()
			if err == nil || err == io.EOF {
				t.Fatalf("err = %v", err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAnthropicStreamRefusesBadChunks(t *testing.T) {
	for name, payload := range map[string]string{
		"invalid UTF-8":   `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte("{\"type\":\"x\xff\"}")) + `"}`,
		"not base64":      `{"bytes":"%%%"}`,
		"not an event":    `{"bytes":"` + base64.StdEncoding.EncodeToString([]byte(`{"text":"no type"}`)) + `"}`,
		"payload garbage": `<html>`,
	} {
		t.Run(name, func(t *testing.T) {
			body := frame(t, map[string]string{":message-type": "event", ":event-type": "chunk"}, []byte(payload))
			if _, err := bedrock.NewAnthropicStream(bytes.NewReader(body), 1<<20).Next(); err == nil {
				t.Fatal("accepted")
			}
		})
	}
}

func TestStreamExceptionIsClassified(t *testing.T) {
	for name, want := range map[string]refusal.Kind{
		"throttlingException":         refusal.Throttled,
		"modelStreamErrorException":   refusal.Upstream,
		"validationException":         refusal.Request,
		"internalServerException":     refusal.Upstream,
		"serviceUnavailableException": refusal.Upstream,
		"modelTimeoutException":       refusal.Upstream,
	} {
		body := append(chunk(t, `{"type":"message_start"}`),
			frame(t, map[string]string{":message-type": "exception", ":exception-type": name}, []byte(`{"message":"boom"}`))...)
		s := bedrock.NewAnthropicStream(bytes.NewReader(body), 1<<20)
		if _, err := s.Next(); err != nil {
			t.Fatal(err)
		}
		_, err := s.Next()
		var re *refusal.Error
		if !errors.As(err, &re) || re.Kind != want || re.Message != "boom" {
			t.Errorf("%s: err = %v, want kind %v", name, err, want)
		}
	}
}

// Claude's ping events are keep-alives: the chunk source reads past them,
// so each Next is progress (the relay's stream idle timeout counts from
// the last one).
func TestChatStreamReadsPastPings(t *testing.T) {
	events := []string{
		`{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}`,
		`{"type":"ping"}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`,
		`{"type":"ping"}`,
		`{"type":"ping"}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`,
		`{"type":"message_stop"}`,
	}
	var body []byte
	for _, e := range events {
		body = append(body, chunk(t, e)...)
	}
	src := bedrock.Dialect{}.ChatStream(bytes.NewReader(body), "m", "id", 1)
	steps := 0
	for {
		_, done, err := src.Next()
		if err != nil {
			t.Fatal(err)
		}
		if done {
			break
		}
		steps++
	}
	if steps != 4 {
		t.Fatalf("Next returned %d times before the end, want 4 (the events that are not pings)", steps)
	}
}
