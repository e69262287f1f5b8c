// Package docscheck holds no code: its test keeps docs/ true to the code.
// Every route registered in internal/api/routes.go and internal/relay/routes.go
// must appear in docs/api.md, and no .go or .md file may point outside the
// repository (a clone has nothing else).
package docscheck
