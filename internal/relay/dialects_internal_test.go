package relay

import (
	"testing"

	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/relay/dialect"
)

// TestDialectsRegistered: every channel type an admin can create has its
// dialect registered (a new type in internal/channel without its line in
// dialects.go would be served as OpenAI-compatible), and the capabilities
// the relay resolves per channel are the ones each kind has.
func TestDialectsRegistered(t *testing.T) {
	t.Parallel()
	for typ := range 1000 {
		if channel.ValidType(typ) && dialects[typ] == nil {
			t.Errorf("channel type %d has no dialect in dialects.go", typ)
		}
	}
	tests := []struct {
		typ               int
		api               dialect.API
		forwards, reasons bool
	}{
		{channel.TypeOpenAI, dialect.OpenAI, true, true},
		{channel.TypeAnthropic, dialect.Anthropic, true, false},
		{channel.TypeGemini, dialect.None, false, false},
		{9999, dialect.OpenAI, true, true}, // an unknown type speaks the OpenAI API
	}
	for _, tc := range tests {
		u := &upstream{Type: tc.typ}
		u.resolve()
		if u.api != tc.api || (u.native != nil) != (tc.api != dialect.None) || (u.forward != nil) != tc.forwards ||
			(u.reasoning != nil) != tc.reasons || u.streamType != "text/event-stream" {
			t.Errorf("type %d resolved to api %d native %v forward %v reasoning %v stream %q", tc.typ, u.api,
				u.native != nil, u.forward != nil, u.reasoning != nil, u.streamType)
		}
	}
}
