package wechat

import (
	"bytes"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// Sign types of API v2 (the sign_type field; absent means MD5).
const (
	SignMD5        = "MD5"
	SignHMACSHA256 = "HMAC-SHA256"
)

// maxFields bounds the fields of one message: a payment notification has
// about 20 (plus coupon_* pairs), so 200 is far above any genuine one.
const maxFields = 200

// sign computes the v2 signature of fields: the non-empty fields except
// sign, sorted by key, joined as k=v&…, then "&key=API_KEY"; MD5 of that,
// or HMAC-SHA256 keyed with the API key; upper-case hex.
func sign(fields map[string]string, signType, apiKey string) (string, error) {
	keys := make([]string, 0, len(fields))
	for k, v := range fields {
		if k == "sign" || v == "" {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(fields[k])
		b.WriteByte('&')
	}
	b.WriteString("key=")
	b.WriteString(apiKey)
	var h hash.Hash
	switch signType {
	case "", SignMD5:
		h = md5.New()
	case SignHMACSHA256:
		h = hmac.New(sha256.New, []byte(apiKey))
	default:
		return "", fmt.Errorf("unsupported sign_type %q", signType)
	}
	h.Write([]byte(b.String()))
	return strings.ToUpper(hex.EncodeToString(h.Sum(nil))), nil
}

// verify checks fields' sign under signType (constant-time compare).
func verify(fields map[string]string, signType, apiKey string) error {
	got := fields["sign"]
	if got == "" {
		return errors.New("message is not signed")
	}
	want, err := sign(fields, signType, apiKey)
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare([]byte(strings.ToUpper(got)), []byte(want)) != 1 {
		return errors.New("signature does not match")
	}
	return nil
}

// encodeXML writes fields as the flat <xml><k>v</k>…</xml> of API v2, in
// key order. Values are escaped rather than put in CDATA so no value can
// close its element early.
func encodeXML(fields map[string]string) []byte {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	b.WriteString("<xml>")
	for _, k := range keys {
		b.WriteString("<" + k + ">")
		xml.EscapeText(&b, []byte(fields[k]))
		b.WriteString("</" + k + ">")
	}
	b.WriteString("</xml>")
	return b.Bytes()
}

// decodeXML reads a flat API v2 message: one <xml> root whose children are
// leaf elements with text (or CDATA). Nested elements, repeated fields,
// invalid UTF-8, NUL bytes and text outside the root
// are refused; encoding/xml expands no external entities.
func decodeXML(body []byte) (map[string]string, error) {
	if !utf8.Valid(body) || bytes.IndexByte(body, 0) >= 0 {
		return nil, errors.New("message is not valid UTF-8 text")
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	d.Strict = true
	fields := map[string]string{}
	depth, roots := 0, 0
	var key string
	var text strings.Builder
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("malformed XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			depth++
			switch depth {
			case 1:
				if roots++; roots > 1 || t.Name.Local != "xml" {
					return nil, errors.New("malformed XML: want one <xml> root")
				}
			case 2:
				key = t.Name.Local
				text.Reset()
			default:
				return nil, errors.New("malformed XML: nested element")
			}
		case xml.EndElement:
			if depth == 2 {
				if _, dup := fields[key]; dup {
					return nil, fmt.Errorf("malformed XML: field %s repeated", key)
				}
				if len(fields) >= maxFields {
					return nil, errors.New("malformed XML: too many fields")
				}
				fields[key] = text.String()
			}
			depth--
		case xml.CharData:
			switch depth {
			case 2:
				text.Write(t)
			case 0:
				if len(bytes.TrimSpace(t)) > 0 {
					return nil, errors.New("malformed XML: text outside <xml>")
				}
			}
		case xml.Directive:
			// A DOCTYPE could declare entities; a genuine message has none.
			return nil, errors.New("malformed XML: directive")
		}
	}
	if roots != 1 {
		return nil, errors.New("malformed XML: want one <xml> root")
	}
	return fields, nil
}
