package payment

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func pemText(typ string, der []byte, headers map[string]string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Headers: headers, Bytes: der}))
}

// wrapped is a bare base64 body broken over lines, as pasted from a console.
func wrapped(der []byte) string {
	s := base64.StdEncoding.EncodeToString(der)
	var b strings.Builder
	for len(s) > 64 {
		b.WriteString(s[:64] + "\r\n")
		s = s[64:]
	}
	return b.String() + s + "\n"
}

// encryptedPKCS8DER is an EncryptedPrivateKeyInfo as `openssl pkcs8
// -topk8 -v2 aes-256-cbc` writes it (PBES2 algorithm, ciphertext).
func encryptedPKCS8DER(t *testing.T) []byte {
	t.Helper()
	ct := make([]byte, 1232)
	rand.Read(ct)
	der, err := asn1.Marshal(struct {
		Algo pkix.AlgorithmIdentifier
		Data []byte
	}{pkix.AlgorithmIdentifier{Algorithm: asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}, Parameters: asn1.NullRawValue}, ct})
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func TestParseKeys(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := x509.MarshalPKCS1PrivateKey(key)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	pkixDER, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	for name, text := range map[string]string{
		"PKCS#1 PEM":          pemText("RSA PRIVATE KEY", pkcs1, nil),
		"PKCS#8 PEM":          pemText("PRIVATE KEY", pkcs8, nil),
		"bare PKCS#8":         base64.StdEncoding.EncodeToString(pkcs8),
		"bare PKCS#1":         base64.StdEncoding.EncodeToString(pkcs1),
		"bare wrapped PKCS#8": wrapped(pkcs8),
		"PEM with spaces":     "\n  " + pemText("PRIVATE KEY", pkcs8, nil) + "\n",
	} {
		got, err := ParsePrivateKey([]byte(text))
		if err != nil || !got.Equal(key) {
			t.Errorf("private %s: %v", name, err)
		}
	}
	for name, text := range map[string]string{
		"PKIX PEM":   pemText("PUBLIC KEY", pkixDER, nil),
		"PKCS#1 PEM": pemText("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(&key.PublicKey), nil),
		"bare PKIX":  base64.StdEncoding.EncodeToString(pkixDER),
		"wrapped":    wrapped(pkixDER),
	} {
		got, err := ParsePublicKey([]byte(text))
		if err != nil || !got.Equal(&key.PublicKey) {
			t.Errorf("public %s: %v", name, err)
		}
	}

	encrypted := map[string]string{
		"ENCRYPTED PRIVATE KEY PEM": pemText("ENCRYPTED PRIVATE KEY", encryptedPKCS8DER(t), nil),
		"bare encrypted PKCS#8":     base64.StdEncoding.EncodeToString(encryptedPKCS8DER(t)),
		"legacy OpenSSL encryption": pemText("RSA PRIVATE KEY", pkcs1, map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00112233445566778899AABBCCDDEEFF"}),
	}
	for name, text := range encrypted {
		if _, err := ParsePrivateKey([]byte(text)); !errors.Is(err, ErrKeyEncrypted) {
			t.Errorf("%s: err = %v, want ErrKeyEncrypted", name, err)
		}
	}

	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	ec, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ecDER, _ := x509.MarshalPKCS8PrivateKey(ec)
	ecPub, _ := x509.MarshalPKIXPublicKey(&ec.PublicKey)
	smallPub, _ := x509.MarshalPKIXPublicKey(&small.PublicKey)
	for name, text := range map[string]string{
		"empty":          "",
		"blank":          " \n\t",
		"junk":           "not a key",
		"junk base64":    "bm90IGEga2V5",
		"truncated PEM":  pemText("PRIVATE KEY", pkcs8, nil)[:200],
		"1024-bit":       pemText("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(small), nil),
		"EC key":         pemText("PRIVATE KEY", ecDER, nil),
		"public as priv": pemText("PUBLIC KEY", pkixDER, nil),
		"NUL":            "\x00\x00",
		"huge":           strings.Repeat("A", MaxKeyBytes+4),
	} {
		if _, err := ParsePrivateKey([]byte(text)); err == nil {
			t.Errorf("private %s: accepted", name)
		}
	}
	for name, text := range map[string]string{
		"empty":          "",
		"1024-bit":       pemText("PUBLIC KEY", smallPub, nil),
		"EC":             pemText("PUBLIC KEY", ecPub, nil),
		"private as pub": pemText("PRIVATE KEY", pkcs8, nil),
	} {
		if _, err := ParsePublicKey([]byte(text)); err == nil {
			t.Errorf("public %s: accepted", name)
		}
	}

	// From files: text wins; a blank text reads the file, bounded.
	dir := t.TempDir()
	file := filepath.Join(dir, "key.pem")
	os.WriteFile(file, []byte(pemText("PRIVATE KEY", pkcs8, nil)), 0o600)
	if got, err := LoadPrivateKey("", file); err != nil || !got.Equal(key) {
		t.Errorf("LoadPrivateKey from file: %v", err)
	}
	big := filepath.Join(dir, "big.pem")
	os.WriteFile(big, make([]byte, MaxKeyBytes+1), 0o600)
	for name, path := range map[string]string{"missing": filepath.Join(dir, "none.pem"), "too big": big, "no path": "", "directory": dir} {
		if _, err := LoadPrivateKey("", path); err == nil {
			t.Errorf("LoadPrivateKey %s: accepted", name)
		}
	}
	pubFile := filepath.Join(dir, "pub.pem")
	os.WriteFile(pubFile, []byte(base64.StdEncoding.EncodeToString(pkixDER)), 0o600)
	if got, err := LoadPublicKey("", pubFile); err != nil || !got.Equal(&key.PublicKey) {
		t.Errorf("LoadPublicKey from file: %v", err)
	}
}
