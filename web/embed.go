// Package web holds the web console: ES modules, CSS and vendored libraries
// embedded in the binary (no Node, no build step), and the handler that
// serves them at "/". The console talks to the JSON API under /api only.
// docs/console.md explains the layout and how to add a page.
package web

import "embed"

// files is everything the browser may load. Go source and tests are not
// embedded: the patterns name the console's own files only.
//
//go:embed index.html css js vendor
var files embed.FS
