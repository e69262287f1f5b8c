package alipay

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/url"
	"sort"
	"strings"
)

// signContent is the RSA2 string to sign: the parameters (one value
// each) except the skipped keys, sorted by key, joined as k=v&… with the
// values unescaped. omitEmpty drops empty values, as a request is signed;
// a notification is verified over every parameter it carries, empty or not
// (Alipay's own SDK, getSignCheckContentV1).
func signContent(v url.Values, omitEmpty bool, skip ...string) string {
	keys := make([]string, 0, len(v))
	for k, vs := range v {
		if contains(skip, k) || (omitEmpty && (len(vs) == 0 || vs[0] == "")) {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v.Get(k))
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// signRSA2 answers the base64 RSA-SHA256 (PKCS#1 v1.5) signature of data.
func signRSA2(key *rsa.PrivateKey, data []byte) (string, error) {
	sum := sha256.Sum256(data)
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(sig), nil
}

// verifyRSA2 checks a base64 RSA-SHA256 signature of data.
func verifyRSA2(key *rsa.PublicKey, data []byte, signature string) error {
	if signature == "" {
		return errors.New("not signed")
	}
	sig, err := base64.StdEncoding.DecodeString(signature)
	if err != nil {
		return errors.New("signature is not base64")
	}
	sum := sha256.Sum256(data)
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, sum[:], sig); err != nil {
		return errors.New("signature does not match")
	}
	return nil
}
