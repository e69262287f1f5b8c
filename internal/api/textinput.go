package api

import (
	"net/http"

	"github.com/modelgate/modelgate/internal/httpx"
	"github.com/modelgate/modelgate/internal/textfield"
)

// Text of /api requests that no domain package owns: search keywords, log
// filters and free-text remarks. The names, lists and keys of users, keys,
// channels, prices and codes are checked by their own packages, on the same
// textfield rules (docs/api.md, Text input).

// maxKeywordChars bounds a search keyword: the widest varchar column a
// search reads (model_name, 191 characters); a longer keyword could match
// only inside log content, which is no search box's purpose.
const maxKeywordChars = 191

// Column lengths of the exact-match log filters (store.Log).
const (
	maxModelNameChars = 191
	maxNameChars      = 64 // username, token_name, group
)

var (
	// accessTokenText is what an Authorization header must be to be
	// looked up as an access token (users.access_token).
	accessTokenText = textfield.Field{Label: "access token", MaxChars: 64}
	// remarkText is an admin top-up's remark, kept in the log's content.
	remarkText = textfield.Field{Label: "备注", MaxChars: 500, Multiline: true}
	// optionValueText is a setting's value; it is also copied into the
	// audit log's content (a TEXT column), so it stays well below that.
	optionValueText = textfield.Field{Label: "配置值", MaxBytes: 16 << 10, Multiline: true}
)

// searchKeyword reads the keyword of a search route.
func searchKeyword(r *http.Request) (string, error) {
	return httpx.QueryText(r, "keyword", maxKeywordChars)
}
