package sse

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func readAll(t *testing.T, in string, max int) ([]Event, error) {
	t.Helper()
	r := NewReader(strings.NewReader(in), max)
	var out []Event
	for {
		ev, err := r.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, Event{Name: ev.Name, Data: append([]byte(nil), ev.Data...)})
	}
}

func TestReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
	}{
		{"openai", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{{"", []byte(`{"a":1}`)}, {"", []byte("[DONE]")}}},
		{"anthropic", "event: message_start\ndata: {}\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n",
			[]Event{{"message_start", []byte("{}")}, {"ping", []byte(`{"type": "ping"}`)}}},
		{"crlf and comments", ": keep-alive\r\n\r\ndata:x\r\n\r\n", []Event{{"", []byte("x")}}},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{"", []byte("a\nb")}}},
		{"no trailing blank line", "data: last", []Event{{"", []byte("last")}}},
		{"event without data is skipped", "event: x\n\ndata: y\n\n", []Event{{"", []byte("y")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in, 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d events %q, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].Name != tt.want[i].Name || !bytes.Equal(got[i].Data, tt.want[i].Data) {
					t.Errorf("event %d = %q %q, want %q %q", i, got[i].Name, got[i].Data, tt.want[i].Name, tt.want[i].Data)
				}
			}
		})
	}
}

// Events far beyond bufio.Scanner's 64 KiB default are read whole.
func TestLongLinesAndBound(t *testing.T) {
	long := strings.Repeat("x", 300<<10)
	got, err := readAll(t, "data: "+long+"\n\n", 1<<20)
	if err != nil || len(got) != 1 || len(got[0].Data) != len(long) {
		t.Fatalf("long event: err %v, %d events", err, len(got))
	}
	if _, err := readAll(t, "data: "+long+"\n\n", 64<<10); !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("bound not enforced: %v", err)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, "message_delta", []byte("a\nb")); err != nil {
		t.Fatal(err)
	}
	if buf.String() != "event: message_delta\ndata: a\ndata: b\n\n" {
		t.Fatalf("wrote %q", buf.String())
	}
	got, _ := readAll(t, buf.String(), 1<<20)
	if len(got) != 1 || string(got[0].Data) != "a\nb" || got[0].Name != "message_delta" {
		t.Fatalf("round trip = %q", got)
	}
}

// Relaying an event allocates nothing once the buffers are warm: writing
// takes a pooled buffer, reading reuses the reader's, and a repeated event
// name is the last one's string.
func TestNoAllocationPerEvent(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts of pooled code are random under the race detector (sync.Pool drops puts)")
	}
	ev := "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"hi\"}}\n\n"
	in := strings.NewReader(strings.Repeat(ev, 1000))
	r := NewReader(in, 1<<20)
	defer r.Release()
	var sink discard
	allocs := testing.AllocsPerRun(500, func() {
		e, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(&sink, e.Name, e.Data); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per event, want 0", allocs)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// A released reader's buffers serve the next one, whose events are its own.
func TestReleaseReuse(t *testing.T) {
	for i := range 3 {
		want := strings.Repeat("y", i*3000) // beyond the read buffer too
		r := NewReader(strings.NewReader("event: e\ndata: "+want+"\n\n"), 1<<20)
		ev, err := r.Next()
		if err != nil || ev.Name != "e" || string(ev.Data) != want {
			t.Fatalf("round %d: %q %d bytes, %v", i, ev.Name, len(ev.Data), err)
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("round %d: %v, want EOF", i, err)
		}
		r.Release()
		r.Release() // twice is harmless
	}
}
