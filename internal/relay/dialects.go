package relay

import (
	"github.com/modelgate/modelgate/internal/channel"
	"github.com/modelgate/modelgate/internal/relay/anthropic"
	"github.com/modelgate/modelgate/internal/relay/azure"
	"github.com/modelgate/modelgate/internal/relay/bedrock"
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/gemini"
	"github.com/modelgate/modelgate/internal/relay/openai"
	"github.com/modelgate/modelgate/internal/relay/vertex"
)

// dialects are the upstream kinds by channel type (docs/relay.md, "Adding a
// provider"): a provider is its package implementing dialect.Dialect and
// one line here. A type not listed speaks the OpenAI-compatible API.
var dialects = map[int]dialect.Dialect{
	channel.TypeOpenAI:    openai.Dialect{},
	channel.TypeAnthropic: anthropic.Dialect{},
	channel.TypeGemini:    gemini.Dialect{},
	channel.TypeAzure:     azure.Dialect{},
	channel.TypeBedrock:   bedrock.Dialect{},
	channel.TypeVertex:    vertex.NewDialect(vertex.NewGrants(nil, nil)), // one token cache per process
}

// dialectOf is the dialect of a channel type.
func dialectOf(typ int) dialect.Dialect {
	if d, ok := dialects[typ]; ok {
		return d
	}
	return openai.Dialect{}
}

// sseMediaType is the Content-Type of a stream whose dialect does not name
// another (dialect.StreamMediaType).
const sseMediaType = "text/event-stream"

// resolve sets u's dialect and its optional capabilities from u.Type, once
// per catalog rebuild: calls then make no type assertion.
func (u *upstream) resolve() {
	u.dialect = dialectOf(u.Type)
	if b, ok := u.dialect.(dialect.Binder); ok {
		// Bound with the pool's first key: the endpoint (Bedrock's region,
		// Vertex's project) is the channel's, which every key of its pool
		// shares (channel.CheckPoolKeys); Authorize then signs with the
		// attempt's own key.
		key := u.Key
		if u.pool != nil && len(u.pool.keys) > 0 {
			key = u.pool.keys[0].Key
		}
		d, err := b.Bind(u.BaseURL, key, u.Other)
		if err != nil {
			d = dialect.Unusable{Err: err}
		}
		u.dialect = d
	}
	u.framed, _ = u.dialect.(dialect.Framed)
	u.api, u.native = dialect.NativeOf(u.dialect)
	u.forward, _ = u.dialect.(dialect.HeaderForwarder)
	u.reasoning, _ = u.dialect.(dialect.ReasoningLimit)
	u.streamType = sseMediaType
	if t, ok := u.dialect.(dialect.StreamMediaType); ok {
		u.streamType = t.StreamMediaType()
	}
}

// takesCompletionTokens reports whether a completion limit added to a chat
// request for the upstream model goes in max_completion_tokens.
func (u *upstream) takesCompletionTokens(model string) bool {
	return u.reasoning != nil && u.reasoning.TakesCompletionTokens(model)
}
