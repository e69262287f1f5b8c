package openai_test

import (
	"github.com/modelgate/modelgate/internal/relay/dialect"
	"github.com/modelgate/modelgate/internal/relay/openai"
)

// Compile-time guards. They live in this external test package because
// relay/dialect imports relay/openai; the relay's registration of
// openai.Dialect{} (internal/relay/dialects.go) checks the same at build.
var (
	_ dialect.Dialect         = openai.Dialect{}
	_ dialect.Native          = openai.Dialect{}
	_ dialect.HeaderForwarder = openai.Dialect{}
	_ dialect.ReasoningLimit  = openai.Dialect{}
)
