package msgtext

import (
	"strconv"
	"strings"
)

// FromAcceptLanguage is the language a reader asked for with an
// Accept-Language header: of the ranges naming zh or en (zh-CN, en-US …),
// the one with the highest weight, the earlier on a tie. ok is false when
// the header names neither (absent, "*", "fr") or gives both a weight of
// 0: the site's MessageLanguage then applies.
func FromAcceptLanguage(header string) (Lang, bool) {
	best, bestQ := Lang(""), 0.0
	for _, part := range strings.Split(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		primary, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(tag)), "-")
		var l Lang
		switch primary {
		case "zh":
			l = Chinese
		case "en":
			l = English
		default:
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok || strings.TrimSpace(k) != "q" {
				continue
			}
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1 {
				f = 0 // a malformed weight does not choose a language
			}
			q = f
		}
		if q > bestQ {
			best, bestQ = l, q
		}
	}
	return best, best != ""
}
