// Package docs holds the project's documentation; it embeds the one file
// the server serves, the OpenAPI description of /api (GET
// /api/openapi.yaml).
package docs

import _ "embed"

// OpenAPI is docs/openapi.yaml.
//
//go:embed openapi.yaml
var OpenAPI []byte
