package alipay

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"sync"
	"testing"
)

// testKeys are generated once per test run: the app's key pair (we sign
// requests, Alipay verifies) and Alipay's (Alipay signs answers and
// notifications, we verify), plus a stranger's.
type testKeys struct {
	app, ali, stranger *rsa.PrivateKey
}

var (
	keysOnce sync.Once
	keys     testKeys
)

func genKeys(t *testing.T) testKeys {
	t.Helper()
	keysOnce.Do(func() {
		gen := func() *rsa.PrivateKey {
			k, err := rsa.GenerateKey(rand.Reader, 2048)
			if err != nil {
				panic(err)
			}
			return k
		}
		keys = testKeys{app: gen(), ali: gen(), stranger: gen()}
	})
	return keys
}

func pkcs1PEM(k *rsa.PrivateKey) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
}

func pkcs8DER(t *testing.T, k *rsa.PrivateKey) []byte {
	t.Helper()
	b, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pkixDER(t *testing.T, k *rsa.PublicKey) []byte {
	t.Helper()
	b, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func pkixPEM(t *testing.T, k *rsa.PublicKey) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pkixDER(t, k)}))
}

// bare is a key body as the Alipay console shows it: base64, no headers.
func bare(der []byte) string { return base64.StdEncoding.EncodeToString(der) }
